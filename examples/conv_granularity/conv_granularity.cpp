/* The granularity experiment: a convolution layer's forward pass (conv2d +
 * bias add) over N synthetic images and F filters, written at four task
 * granularities:
 *   1  one conv2d task and one bias_add task per (sample, filter)
 *   2  one fused conv2d+bias task per (sample, filter)
 *   3  one task per sample, for all filters
 *   4  one task per batch of B samples
 * Granularity 1 is how DAHL submits it; 3 and 4 are coarsened by hand.  Run
 * it under any policy (STARPU_SCHED, or the starpu-fusing-run launcher);
 * with -batched 1 the kernels' batched implementations are registered, so
 * `fusing` runs each batch of granularity-1 tasks as one im2col + GEMM.
 * Coarse tasks (3, 4) use that same GEMM kernel inside one task, so the
 * comparison is about granularity, not about kernels.
 *
 *   conv_granularity -granularity G [-samples N] [-filters F] [-size S]
 *                    [-ksize K] [-channels C] [-batch B] [-batched 0|1]
 *                    [-trace FILE]
 *
 * -trace FILE writes each task's run from StarPU's per-task profiling
 * (task->profiling_info, read in the task's callback) as CSV lines
 *   worker,start_us,end_us,codelet
 * in starpu_timing_now() microseconds, for examples/bench/plot.sh.
 *
 * Checks every output against a plain host computation, then prints:
 *   granularity,size,samples,filters,tasks,seconds,executing_fraction,submit_seconds
 * where submit_seconds is the part of seconds the program spent submitting
 * (until its last submission returned): the floor no scheduler removes. */
#include "kernels/conv2d.h"
#include "starpu_fusing.h"

#include <starpu.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace {

struct Options {
	int granularity = 1, samples = 16, filters = 8, size = 28, ksize = 5, channels = 1, batch = 4, batched = 0;
	std::string trace; /* -trace FILE; empty: none */
};

/* -trace: each task's run as StarPU's profiling saw it, appended by the
 * task's callback (any worker thread, hence the mutex). */
struct TaskRun {
	int worker;
	double start_us, end_us;
	const char *codelet;
};
std::mutex task_runs_mutex;
std::vector<TaskRun> task_runs;

void record_task_run(void *arg)
{
	struct starpu_task *task = static_cast<struct starpu_task *>(arg);
	struct starpu_profiling_task_info *info = task->profiling_info; /* StarPU 1.3's timespec_to_us takes no const */
	if (!info)
		return;
	std::lock_guard<std::mutex> lock(task_runs_mutex);
	task_runs.push_back({info->workerid, starpu_timing_timespec_to_us(&info->start_time),
			     starpu_timing_timespec_to_us(&info->end_time), task->cl->name});
}

/* Submits task, with record_task_run as its callback under -trace. */
void submit(struct starpu_task *task, const Options &o)
{
	if (!o.trace.empty()) {
		task->callback_func = record_task_run;
		task->callback_arg = task;
	}
	STARPU_CHECK_RETURN_VALUE(starpu_task_submit(task), "starpu_task_submit");
}

/* A coarse task (granularities 3 and 4): its samples' images, all filters,
 * all biases, and the outputs of its samples, laid out in that order. */
struct CoarseLayout {
	int samples;
	int filters;
};

void coarse_body(void *buffers[], void *cl_arg)
{
	const CoarseLayout &layout = *static_cast<CoarseLayout *>(cl_arg);
	const int s = layout.samples, f = layout.filters;
	std::vector<std::vector<void *>> tasks;
	for (int i = 0; i < s; i++)
		for (int k = 0; k < f; k++)
			tasks.push_back({buffers[i], buffers[s + k], buffers[s + f + k], buffers[s + 2 * f + i * f + k]});
	std::vector<void **> task_buffers;
	for (auto &task : tasks)
		task_buffers.push_back(task.data());
	conv2d_bias_batched(static_cast<unsigned>(task_buffers.size()), task_buffers.data(), nullptr, nullptr);
}

struct starpu_codelet coarse_codelet = [] {
	struct starpu_codelet cl;
	starpu_codelet_init(&cl);
	cl.cpu_funcs[0] = coarse_body;
	cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
	cl.name = "conv2d_bias_coarse";
	return cl;
}();

int parse(int argc, char **argv, Options &o)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		std::string name = argv[i];
		int value = std::atoi(argv[i + 1]);
		if (name == "-trace") o.trace = argv[i + 1];
		else if (name == "-granularity") o.granularity = value;
		else if (name == "-samples") o.samples = value;
		else if (name == "-filters") o.filters = value;
		else if (name == "-size") o.size = value;
		else if (name == "-ksize") o.ksize = value;
		else if (name == "-channels") o.channels = value;
		else if (name == "-batch") o.batch = value;
		else if (name == "-batched") o.batched = value;
		else return -1;
	}
	if (argc % 2 == 0 || o.granularity < 1 || o.granularity > 4 || o.samples < 1 || o.filters < 1 || o.ksize < 1 ||
	    o.size < o.ksize || o.channels < 1 || o.batch < 1)
		return -1;
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	if (parse(argc, argv, o) != 0) {
		std::fprintf(stderr, "usage: %s -granularity 1|2|3|4 [-samples N] [-filters F] [-size S] [-ksize K] [-channels C] [-batch B] [-batched 0|1] [-trace FILE]\n", argv[0]);
		return 2;
	}
	if (o.batched && conv2d_register_batched_kernels() != 0)
		return 1;
	int ret = starpu_init(nullptr);
	if (ret == -ENODEV)
		return 77;
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_init");
	starpu_profiling_status_set(STARPU_PROFILING_ENABLE);

	const int out = o.size - o.ksize + 1;
	std::mt19937 random(42);
	std::uniform_real_distribution<float> value(-1.0f, 1.0f);
	std::vector<std::vector<float>> images(o.samples, std::vector<float>(std::size_t(o.size) * o.size * o.channels));
	std::vector<std::vector<float>> filters(o.filters, std::vector<float>(std::size_t(o.ksize) * o.ksize * o.channels));
	std::vector<float> biases(o.filters);
	std::vector<std::vector<float>> outputs(std::size_t(o.samples) * o.filters, std::vector<float>(std::size_t(out) * out));
	for (auto &v : images) for (float &x : v) x = value(random);
	for (auto &v : filters) for (float &x : v) x = value(random);
	for (float &x : biases) x = value(random);

	std::vector<starpu_data_handle_t> image_h(o.samples), filter_h(o.filters), bias_h(o.filters), output_h(outputs.size());
	for (int s = 0; s < o.samples; s++)
		starpu_block_data_register(&image_h[s], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(images[s].data()), o.size,
					   o.size * o.size, o.size, o.size, o.channels, sizeof(float));
	for (int f = 0; f < o.filters; f++) {
		starpu_block_data_register(&filter_h[f], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(filters[f].data()), o.ksize,
					   o.ksize * o.ksize, o.ksize, o.ksize, o.channels, sizeof(float));
		starpu_variable_data_register(&bias_h[f], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&biases[f]), sizeof(float));
	}
	for (std::size_t t = 0; t < outputs.size(); t++)
		starpu_matrix_data_register(&output_h[t], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(outputs[t].data()), out, out, out, sizeof(float));

	std::vector<CoarseLayout> layouts;
	layouts.reserve(o.samples);
	long tasks = 0;
	double start = starpu_timing_now();
	auto submit_coarse = [&](int first, int count) {
		layouts.push_back(CoarseLayout{count, o.filters});
		std::vector<starpu_data_handle_t> handles;
		std::vector<enum starpu_data_access_mode> modes;
		for (int i = 0; i < count; i++) { handles.push_back(image_h[first + i]); modes.push_back(STARPU_R); }
		for (int f = 0; f < o.filters; f++) { handles.push_back(filter_h[f]); modes.push_back(STARPU_R); }
		for (int f = 0; f < o.filters; f++) { handles.push_back(bias_h[f]); modes.push_back(STARPU_R); }
		for (int i = 0; i < count; i++)
			for (int f = 0; f < o.filters; f++) { handles.push_back(output_h[std::size_t(first + i) * o.filters + f]); modes.push_back(STARPU_W); }
		struct starpu_task *task = starpu_task_create();
		task->cl = &coarse_codelet;
		task->cl_arg = &layouts.back();
		task->nbuffers = static_cast<int>(handles.size());
		task->dyn_handles = static_cast<starpu_data_handle_t *>(std::malloc(handles.size() * sizeof(handles[0])));
		task->dyn_modes = static_cast<enum starpu_data_access_mode *>(std::malloc(modes.size() * sizeof(modes[0])));
		std::memcpy(task->dyn_handles, handles.data(), handles.size() * sizeof(handles[0]));
		std::memcpy(task->dyn_modes, modes.data(), modes.size() * sizeof(modes[0]));
		submit(task, o);
		tasks++;
	};
	for (int s = 0; s < o.samples; s++) {
		if (o.granularity == 3) {
			submit_coarse(s, 1);
			continue;
		}
		if (o.granularity == 4) {
			if (s % o.batch == 0)
				submit_coarse(s, std::min(o.batch, o.samples - s));
			continue;
		}
		for (int f = 0; f < o.filters; f++) {
			starpu_data_handle_t output = output_h[std::size_t(s) * o.filters + f];
			if (o.granularity == 1) {
				submit(starpu_task_build(&conv2d_codelet, STARPU_R, image_h[s], STARPU_R, filter_h[f], STARPU_W, output, 0), o);
				submit(starpu_task_build(&bias_add_codelet, STARPU_RW, output, STARPU_R, bias_h[f], 0), o);
				tasks += 2;
			} else {
				submit(starpu_task_build(&conv2d_bias_codelet, STARPU_R, image_h[s], STARPU_R, filter_h[f], STARPU_R, bias_h[f],
							 STARPU_W, output, 0), o);
				tasks++;
			}
		}
	}
	double submit_seconds = (starpu_timing_now() - start) / 1e6;
	starpu_task_wait_for_all();
	double seconds = (starpu_timing_now() - start) / 1e6;

	double executing = 0.0, total = 0.0;
	for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
		struct starpu_profiling_worker_info info;
		if (starpu_profiling_worker_get_info(w, &info) == 0) {
			executing += starpu_timing_timespec_to_us(&info.executing_time);
			total += starpu_timing_timespec_to_us(&info.total_time);
		}
	}
	for (auto *group : {&image_h, &filter_h, &bias_h, &output_h})
		for (starpu_data_handle_t h : *group)
			starpu_data_unregister(h);
	starpu_shutdown();

	/* Check against a plain host computation. */
	for (int s = 0; s < o.samples; s++)
		for (int f = 0; f < o.filters; f++)
			for (int y = 0; y < out; y++)
				for (int x = 0; x < out; x++) {
					float sum = biases[f];
					for (int c = 0; c < o.channels; c++)
						for (int v = 0; v < o.ksize; v++)
							for (int u = 0; u < o.ksize; u++)
								sum += images[s][(std::size_t(c) * o.size + y + v) * o.size + x + u] *
								       filters[f][(std::size_t(c) * o.ksize + v) * o.ksize + u];
					float got = outputs[std::size_t(s) * o.filters + f][std::size_t(y) * out + x];
					if (!(std::fabs(got - sum) <= 1e-3f * (1.0f + std::fabs(sum)))) {
						std::fprintf(stderr, "wrong output: sample %d filter %d (%d,%d): %g, expected %g\n", s, f, x, y, got, sum);
						return 1;
					}
				}
	if (!o.trace.empty()) {
		std::FILE *trace = std::fopen(o.trace.c_str(), "w");
		if (!trace) {
			std::perror(o.trace.c_str());
			return 1;
		}
		std::fprintf(trace, "worker,start_us,end_us,codelet\n");
		for (const TaskRun &run : task_runs)
			std::fprintf(trace, "%d,%.3f,%.3f,%s\n", run.worker, run.start_us, run.end_us, run.codelet ? run.codelet : "unnamed");
		std::fclose(trace);
	}
	std::printf("%d,%d,%d,%d,%ld,%.6f,%.3f,%.6f\n", o.granularity, o.size, o.samples, o.filters, tasks, seconds,
		    total > 0 ? executing / total : 0.0, submit_seconds);
	return 0;
}
