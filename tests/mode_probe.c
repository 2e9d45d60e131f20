/* A program that links libstarpu before libstarpu-fusing and picks the
 * policy itself: its starpu_task_submit calls reach StarPU's definition,
 * so submission-time fusion cannot see them (tests/e2e/mode.sh). */
#include <starpu.h>
#include <starpu_fusing.h>

static void increment(void *buffers[], void *arg)
{
	(void)arg;
	(*(int *)STARPU_VARIABLE_GET_PTR(buffers[0]))++;
}

static struct starpu_codelet increment_cl = {
	.cpu_funcs = {increment},
	.nbuffers = 1,
	.modes = {STARPU_RW},
	.name = "increment",
};

int main(void)
{
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.sched_policy = starpu_fusing_policy();
	if (!conf.sched_policy)
		return 1; /* it printed why */
	if (starpu_init(&conf) != 0)
		return 77;
	int value = 0;
	starpu_data_handle_t handle;
	starpu_variable_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)&value, sizeof(value));
	for (int i = 0; i < 100; i++)
		if (starpu_task_insert(&increment_cl, STARPU_RW, handle, 0) != 0)
			return 1;
	starpu_data_unregister(handle);
	starpu_shutdown();
	return value == 100 ? 0 : 1;
}
