/* Built as libstarpu-9.9.so: what the loader sees when a program links a
 * StarPU line the library was not built for (tests/e2e/selection.sh). */
int another_starpu_line_stub(void);
int another_starpu_line_stub(void)
{
	return 0;
}
