/* Convolution kernels; see conv2d.h. */
#include "kernels/conv2d.h"

#include "kernels/cross_correlation.h"
#include "starpu_fusing.h"

namespace {

using fusing::kernels::Grid;
using fusing::kernels::grid_of;

float bias_in(void *buffer)
{
	return *reinterpret_cast<float *>(STARPU_VARIABLE_GET_PTR(buffer));
}

/* The per-task codelet functions: plain loops. */
void conv2d_cpu(void *buffers[], void *)
{
	fusing::kernels::correlate(grid_of<float>(buffers[0]), grid_of<float>(buffers[1]), grid_of<float>(buffers[2]), 0.0f);
}

void bias_add_cpu(void *buffers[], void *)
{
	const Grid<float> output = grid_of<float>(buffers[0]);
	const float bias = bias_in(buffers[1]);
	for (unsigned y = 0; y < output.ny; y++)
		for (unsigned x = 0; x < output.nx; x++)
			output.at(0, y, x) += bias;
}

void conv2d_bias_cpu(void *buffers[], void *)
{
	fusing::kernels::correlate(grid_of<float>(buffers[0]), grid_of<float>(buffers[1]), grid_of<float>(buffers[3]), bias_in(buffers[2]));
}

struct starpu_codelet make_codelet(void (*function)(void **, void *), const char *name,
				   std::initializer_list<enum starpu_data_access_mode> modes)
{
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = function;
	cl.nbuffers = static_cast<int>(modes.size());
	int b = 0;
	for (enum starpu_data_access_mode mode : modes)
		cl.modes[b++] = mode;
	cl.name = name;
	return cl;
}

} // namespace

extern "C" {

struct starpu_codelet conv2d_codelet = make_codelet(conv2d_cpu, "conv2d", {STARPU_R, STARPU_R, STARPU_W});
struct starpu_codelet bias_add_codelet = make_codelet(bias_add_cpu, "bias_add", {STARPU_RW, STARPU_R});
struct starpu_codelet conv2d_bias_codelet = make_codelet(conv2d_bias_cpu, "conv2d_bias", {STARPU_R, STARPU_R, STARPU_R, STARPU_W});
struct starpu_codelet conv2d_matrix_codelet = make_codelet(conv2d_cpu, "conv2d_matrix", {STARPU_R, STARPU_R, STARPU_W});

void conv2d_batched(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	fusing::kernels::correlate_tasks<float>(ntasks, task_buffers, 0, 1, -1, 2);
}

void conv2d_bias_batched(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	fusing::kernels::correlate_tasks<float>(ntasks, task_buffers, 0, 1, 2, 3);
}

void bias_add_batched(unsigned ntasks, void **task_buffers[], void *[], void *)
{
	for (unsigned t = 0; t < ntasks; t++)
		bias_add_cpu(task_buffers[t], nullptr);
}

int conv2d_register_batched_kernels(void)
{
	struct {
		struct starpu_codelet *codelet;
		starpu_fusing_batched_cpu_func_t function;
	} kernels[] = {{&conv2d_codelet, conv2d_batched}, {&bias_add_codelet, bias_add_batched}, {&conv2d_bias_codelet, conv2d_bias_batched},
		       {&conv2d_matrix_codelet, conv2d_batched}};
	for (auto &kernel : kernels) {
		struct starpu_fusing_batched_implementation implementation = {};
		implementation.size = sizeof(implementation);
		implementation.cpu_func = kernel.function;
		int ret = starpu_fusing_register_batched(kernel.codelet, &implementation);
		if (ret != 0)
			return ret;
	}
	return 0;
}

} // extern "C"
