/* mpi_stencil: a periodic 1-D stencil distributed over the ranks of a
 * StarPU-MPI program, with tasks small enough to fuse.
 *
 *   mpirun -np 2 mpi_stencil [-cells W] [-steps T] [-us D]
 *
 * Cell i of step t is the sum of cells i-1, i, i+1 of step t-1, plus one
 * (unsigned arithmetic, which wraps).  Cells are distributed in contiguous
 * blocks, one block per rank; every rank submits the whole graph with
 * starpu_mpi_task_insert and StarPU-MPI runs each task on the owner of the
 * cell it writes, sending block edges between ranks.  Each task spins D
 * microseconds (default 20) before computing.
 *
 * At the end rank 0 gathers every cell, checks it against a host
 * computation and prints one line:
 *   mpi_stencil: ranks R, cells W, steps T, checksum C, ok
 * Run it under any policy on every rank (STARPU_SCHED, or the
 * starpu-fusing-run launcher inside mpirun); the checksum does not depend on
 * the policy. */
#include "examples/common/spin_codelets.h"

#include <starpu.h>
#include <starpu_mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct starpu_codelet stencil_codelet = {
	.cpu_funcs = {spin_and_stencil},
	.nbuffers = 4,
	.modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
	.name = "mpi_stencil",
};

static int owner_of(long cell, long cells, int ranks)
{
	return (int)(cell * ranks / cells);
}

int main(int argc, char **argv)
{
	long cells = 64, steps = 200;
	double us = 20.0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-cells")) cells = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-steps")) steps = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-us")) us = atof(argv[i + 1]);
		else argc = 0;
	}
	if (argc % 2 == 0 || cells < 3 || steps < 1 || us < 0) {
		fprintf(stderr, "usage: %s [-cells W (>= 3)] [-steps T] [-us D]\n", argv[0]);
		return 2;
	}

	int ret = starpu_mpi_init_conf(&argc, &argv, 1, MPI_COMM_WORLD, NULL);
	if (ret == -ENODEV)
		return 77;
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_mpi_init_conf");
	int rank, ranks;
	starpu_mpi_comm_rank(MPI_COMM_WORLD, &rank);
	starpu_mpi_comm_size(MPI_COMM_WORLD, &ranks);

	/* Two rows of cells.  Other ranks give StarPU-MPI memory only for the
	 * cells they own (it allocates its copies of the others); rank 0 gives
	 * it every cell, so that gathering ends with the whole grid in rows. */
	unsigned *rows[2] = {calloc(cells, sizeof(unsigned)), calloc(cells, sizeof(unsigned))};
	starpu_data_handle_t *handles[2] = {malloc(cells * sizeof(starpu_data_handle_t)), malloc(cells * sizeof(starpu_data_handle_t))};
	for (int r = 0; r < 2; r++)
		for (long i = 0; i < cells; i++) {
			int owner = owner_of(i, cells, ranks);
			rows[r][i] = (unsigned)(r * cells + i);
			if (owner == rank || rank == 0)
				starpu_variable_data_register(&handles[r][i], STARPU_MAIN_RAM, (uintptr_t)&rows[r][i], sizeof(unsigned));
			else
				starpu_variable_data_register(&handles[r][i], -1, (uintptr_t)NULL, sizeof(unsigned));
			starpu_mpi_data_register(handles[r][i], r * cells + i, owner);
		}

	double start = starpu_timing_now();
	for (long t = 0; t < steps; t++) {
		starpu_data_handle_t *in = handles[t % 2], *out = handles[(t + 1) % 2];
		for (long i = 0; i < cells; i++) {
			ret = starpu_mpi_task_insert(MPI_COMM_WORLD, &stencil_codelet, STARPU_R, in[(i + cells - 1) % cells],
						     STARPU_R, in[i], STARPU_R, in[(i + 1) % cells], STARPU_W, out[i],
						     STARPU_VALUE, &us, sizeof(us), 0);
			STARPU_CHECK_RETURN_VALUE(ret, "starpu_mpi_task_insert");
		}
	}
	starpu_task_wait_for_all();
	starpu_mpi_barrier(MPI_COMM_WORLD);
	double seconds = (starpu_timing_now() - start) / 1e6;

	/* Rank 0 gathers both rows (unregistering writes them back to rows),
	 * then checks. */
	for (int r = 0; r < 2; r++)
		for (long i = 0; i < cells; i++) {
			starpu_mpi_get_data_on_node(MPI_COMM_WORLD, handles[r][i], 0);
			starpu_data_unregister(handles[r][i]);
		}
	int status = 0;
	if (rank == 0) {
		unsigned *expected[2] = {calloc(cells, sizeof(unsigned)), calloc(cells, sizeof(unsigned))};
		for (int r = 0; r < 2; r++)
			for (long i = 0; i < cells; i++)
				expected[r][i] = (unsigned)(r * cells + i);
		stencil_on_host(expected, cells, steps);
		unsigned checksum = 0;
		for (int r = 0; r < 2 && status == 0; r++)
			for (long i = 0; i < cells; i++) {
				if (rows[r][i] != expected[r][i]) {
					fprintf(stderr, "mpi_stencil: row %d cell %ld is %u, expected %u\n", r, i, rows[r][i], expected[r][i]);
					status = 1;
					break;
				}
				checksum = checksum * 31u + rows[r][i];
			}
		if (status == 0)
			printf("mpi_stencil: ranks %d, cells %ld, steps %ld, checksum %u, %.3f s, ok\n", ranks, cells, steps, checksum, seconds);
		free(expected[0]);
		free(expected[1]);
	}
	starpu_mpi_shutdown();
	for (int r = 0; r < 2; r++) {
		free(rows[r]);
		free(handles[r]);
	}
	return status;
}
