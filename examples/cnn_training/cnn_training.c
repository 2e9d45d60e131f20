/* A small CNN trained as DAHL trains one (github PhoqueEberlue/dahl): one
 * convolution layer (valid cross-correlation, no padding), ReLU, 2x2 max
 * pooling, a dense layer, softmax with cross-entropy, and SGD.  Written the
 * way DAHL submits it to StarPU:
 *  - one task per (sample, filter) for the convolution and its filter
 *    gradient, one task per sample for everything else;
 *  - asynchronous partition plans around every step (per sample, and per
 *    filter inside a sample: two levels), read-only partitions for inputs;
 *  - gradients accumulated with STARPU_REDUX (init and reduction codelets),
 *    each on a whole tensor (see conv_filter_gradient_cpu);
 *  - per-batch buffers registered at the start of the batch and dropped at
 *    its end (DAHL's arena), gradients invalidated after each update.
 * With -g sample the same step is coarsened by hand: one task per sample for
 * the convolution and its gradient (all filters at once).
 *
 * The program checks itself: the same training runs on the host in plain
 * loops, and the parameters must agree (relative 1e-3; reductions sum in
 * another order).  It prints, per epoch, the loss, accuracy and time; then
 * the tasks submitted, how many ran their function inside a batch of
 * starpu-fusing (when the library is loaded; tasks its kernel pack runs
 * call no function of this program and are not counted: its statistics
 * count them), and each worker's executing proportion.
 *
 * Usage: cnn_training [-img N] [-kernel K] [-filters F] [-samples S]
 *                     [-batch B] [-epochs E] [-g fine|sample] [-lr L] */
#include <starpu.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLASSES 10

/* starpu-fusing's, when the program runs with the library loaded. */
unsigned starpu_fusing_current_batch_size(void) __attribute__((weak));

struct shape {
	unsigned img, kernel, filters, samples, batch, epochs;
	unsigned out, pooled; /* img - kernel + 1, out / 2 */
	unsigned features;    /* filters * pooled * pooled */
	float lr;
	int per_sample;       /* -g sample */
};

/* ------------------------------------------------------------ statistics */

static unsigned long tasks_submitted;
static double members_in_batches, batches; /* summed by workers */
static starpu_pthread_mutex_t batch_count_mutex = STARPU_PTHREAD_MUTEX_INITIALIZER;

static void note_run(void)
{
	unsigned size = starpu_fusing_current_batch_size ? starpu_fusing_current_batch_size() : 0;
	if (!size)
		return;
	STARPU_PTHREAD_MUTEX_LOCK(&batch_count_mutex);
	members_in_batches += 1.0;
	batches += 1.0 / size;
	STARPU_PTHREAD_MUTEX_UNLOCK(&batch_count_mutex);
}

/* ------------------------------------------------------------- kernels
 * Plain loops shared by the codelets and the host reference. */

static void cross_correlate(const float *in, unsigned in_ld, const float *filter, unsigned filter_ld, unsigned k,
			    float *out, unsigned out_ld, unsigned out_n)
{
	for (unsigned y = 0; y < out_n; y++)
		for (unsigned x = 0; x < out_n; x++) {
			float sum = 0.f;
			for (unsigned i = 0; i < k; i++)
				for (unsigned j = 0; j < k; j++)
					sum += in[(y + i) * in_ld + x + j] * filter[i * filter_ld + j];
			out[y * out_ld + x] = sum;
		}
}

/* dfilter += correlation of the input with the output gradient */
static void filter_gradient(const float *in, unsigned in_ld, const float *dout, unsigned dout_ld, unsigned out_n,
			    float *dfilter, unsigned dfilter_ld, unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		for (unsigned j = 0; j < k; j++) {
			float sum = 0.f;
			for (unsigned y = 0; y < out_n; y++)
				for (unsigned x = 0; x < out_n; x++)
					sum += in[(y + i) * in_ld + x + j] * dout[y * dout_ld + x];
			dfilter[i * dfilter_ld + j] += sum;
		}
}

static void relu(float *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] < 0.f)
			v[i] = 0.f;
}

/* 2x2 max pooling of filters maps of n x n (rows of ld) into maps of n/2 */
static void max_pool(const float *in, unsigned in_ld, unsigned maps, unsigned n, float *out, unsigned out_ld, float *mask)
{
	unsigned half = n / 2;
	for (unsigned m = 0; m < maps; m++)
		for (unsigned y = 0; y < half; y++)
			for (unsigned x = 0; x < half; x++) {
				unsigned best = (m * n + 2 * y) * in_ld + 2 * x;
				for (unsigned dy = 0; dy < 2; dy++)
					for (unsigned dx = 0; dx < 2; dx++) {
						unsigned at = (m * n + 2 * y + dy) * in_ld + 2 * x + dx;
						mask[at] = 0.f;
						if (in[at] > in[best])
							best = at;
					}
				mask[best] = 1.f;
				out[(m * half + y) * out_ld + x] = in[best];
			}
}

static void max_unpool(const float *dout, unsigned dout_ld, const float *mask, unsigned maps, unsigned n, float *din, unsigned din_ld)
{
	unsigned half = n / 2;
	for (unsigned m = 0; m < maps; m++)
		for (unsigned y = 0; y < n; y++)
			for (unsigned x = 0; x < n; x++) {
				unsigned at = (m * n + y) * din_ld + x;
				din[at] = mask[at] * dout[(m * half + y / 2) * dout_ld + x / 2];
			}
}

static void dense(const float *v, unsigned n, const float *w, const float *b, float *logits)
{
	for (unsigned c = 0; c < CLASSES; c++) {
		float sum = b[c];
		for (unsigned i = 0; i < n; i++)
			sum += w[c * n + i] * v[i];
		logits[c] = sum;
	}
}

/* Softmax cross-entropy: the gradient into dlogits, the loss returned. */
static double softmax_loss(const float *logits, int label, float *dlogits, int *correct)
{
	float top = logits[0];
	int argmax = 0;
	for (int c = 1; c < CLASSES; c++)
		if (logits[c] > top) {
			top = logits[c];
			argmax = c;
		}
	double sum = 0.0;
	for (int c = 0; c < CLASSES; c++)
		sum += exp((double)(logits[c] - top));
	for (int c = 0; c < CLASSES; c++)
		dlogits[c] = (float)(exp((double)(logits[c] - top)) / sum) - (c == label ? 1.f : 0.f);
	*correct = argmax == label;
	return -((double)(logits[label] - top) - log(sum));
}

/* --------------------------------------------------------------- codelets */

#define MAT(b) ((float *)STARPU_MATRIX_GET_PTR(b))
#define LD(b) STARPU_MATRIX_GET_LD(b)
#define VEC(b) ((float *)STARPU_VECTOR_GET_PTR(b))

/* Named as DAHL names a one-channel correlation of matrices (its
 * matrix_cross_correlation codelet), and like DAHL's it takes no argument,
 * only its buffers: at granularity fine, one task per (sample, filter) on
 * an image, a filter and an output matrix, the shape starpu-fusing's kernel
 * pack knows under that name, and runs as one im2col and one matrix product
 * per image (README, Kernel packs). */
static void matrix_cross_correlation_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	note_run();
	/* input (img x img), filters (k x k each, STARPU_MATRIX_GET_NY/k of
	 * them), output (out x out each): one filter per task at granularity
	 * fine, all of them per sample. */
	unsigned kernel = STARPU_MATRIX_GET_NX(buffers[1]), out = STARPU_MATRIX_GET_NX(buffers[2]);
	unsigned maps = STARPU_MATRIX_GET_NY(buffers[1]) / kernel;
	for (unsigned f = 0; f < maps; f++)
		cross_correlate(MAT(buffers[0]), LD(buffers[0]), MAT(buffers[1]) + f * kernel * LD(buffers[1]), LD(buffers[1]),
				kernel, MAT(buffers[2]) + f * out * LD(buffers[2]), LD(buffers[2]), out);
}

/* Adds the gradients of the filters from first_filter on, one per output
 * map in buffers[1] (one at DAHL's granularity), into all the filters'
 * gradients.  The gradient is one STARPU_REDUX handle, not a partition:
 * StarPU ends the reduction of a child of a partition plan with copy tasks
 * that partition the parent again after starpu_data_unpartition_submit
 * (_starpu_data_end_reduction_mode -> _starpu_data_cpy, reduction.c), and
 * the next partition asserts "One can't submit several partition plannings
 * at the same time" (DAHL's convolution has a FIXME on this). */
static void conv_filter_gradient_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	struct shape s;
	unsigned first_filter;
	starpu_codelet_unpack_args(cl_arg, &s, &first_filter);
	unsigned maps = STARPU_MATRIX_GET_NY(buffers[1]) / s.out;
	for (unsigned f = 0; f < maps; f++)
		filter_gradient(MAT(buffers[0]), LD(buffers[0]), MAT(buffers[1]) + f * s.out * LD(buffers[1]), LD(buffers[1]), s.out,
				MAT(buffers[2]) + (first_filter + f) * s.kernel * LD(buffers[2]), LD(buffers[2]), s.kernel);
}

static void relu_forward_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	note_run();
	relu(MAT(buffers[0]), STARPU_MATRIX_GET_NX(buffers[0]) * STARPU_MATRIX_GET_NY(buffers[0]));
}

static void pool_forward_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	struct shape s;
	starpu_codelet_unpack_args(cl_arg, &s);
	max_pool(MAT(buffers[0]), LD(buffers[0]), s.filters, s.out, MAT(buffers[1]), LD(buffers[1]), MAT(buffers[2]));
}

static void dense_forward_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	struct shape s;
	starpu_codelet_unpack_args(cl_arg, &s);
	dense(MAT(buffers[0]), s.features, MAT(buffers[1]), MAT(buffers[2]), VEC(buffers[3]));
}

static void loss_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	int label, correct;
	starpu_codelet_unpack_args(cl_arg, &label);
	double loss = softmax_loss(VEC(buffers[0]), label, VEC(buffers[1]), &correct);
	*(double *)STARPU_VARIABLE_GET_PTR(buffers[2]) += loss;
	*(double *)STARPU_VARIABLE_GET_PTR(buffers[3]) += correct;
}

static void dense_weight_gradient_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	struct shape s;
	starpu_codelet_unpack_args(cl_arg, &s);
	const float *dlogits = VEC(buffers[0]), *v = MAT(buffers[1]);
	float *dw = MAT(buffers[2]), *db = MAT(buffers[3]);
	for (unsigned c = 0; c < CLASSES; c++) {
		db[c] += dlogits[c];
		for (unsigned i = 0; i < s.features; i++)
			dw[c * s.features + i] += dlogits[c] * v[i];
	}
}

static void dense_input_gradient_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	struct shape s;
	starpu_codelet_unpack_args(cl_arg, &s);
	const float *dlogits = VEC(buffers[0]), *w = MAT(buffers[1]);
	float *dv = MAT(buffers[2]);
	for (unsigned i = 0; i < s.features; i++) {
		float sum = 0.f;
		for (unsigned c = 0; c < CLASSES; c++)
			sum += w[c * s.features + i] * dlogits[c];
		dv[i] = sum;
	}
}

static void pool_backward_cpu(void *buffers[], void *cl_arg)
{
	note_run();
	struct shape s;
	starpu_codelet_unpack_args(cl_arg, &s);
	max_unpool(MAT(buffers[0]), LD(buffers[0]), MAT(buffers[1]), s.filters, s.out, MAT(buffers[2]), LD(buffers[2]));
}

static void relu_backward_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	note_run();
	const float *activation = MAT(buffers[0]);
	float *d = MAT(buffers[1]);
	unsigned n = STARPU_MATRIX_GET_NX(buffers[1]) * STARPU_MATRIX_GET_NY(buffers[1]);
	for (unsigned i = 0; i < n; i++)
		if (activation[i] <= 0.f)
			d[i] = 0.f;
}

/* p -= scale * g; every parameter and gradient is a contiguous matrix */
static void sgd_cpu(void *buffers[], void *cl_arg)
{
	float scale;
	starpu_codelet_unpack_args(cl_arg, &scale);
	const float *g = MAT(buffers[0]);
	float *p = MAT(buffers[1]);
	unsigned n = STARPU_MATRIX_GET_NX(buffers[1]) * STARPU_MATRIX_GET_NY(buffers[1]);
	for (unsigned i = 0; i < n; i++)
		p[i] -= scale * g[i];
}

/* STARPU_REDUX: matrices of gradients and variables of sums start at zero
 * and add up. */
static void matrix_zero_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	for (unsigned y = 0; y < STARPU_MATRIX_GET_NY(buffers[0]); y++)
		memset(MAT(buffers[0]) + y * LD(buffers[0]), 0, STARPU_MATRIX_GET_NX(buffers[0]) * sizeof(float));
}

static void matrix_add_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	for (unsigned y = 0; y < STARPU_MATRIX_GET_NY(buffers[0]); y++)
		for (unsigned x = 0; x < STARPU_MATRIX_GET_NX(buffers[0]); x++)
			MAT(buffers[0])[y * LD(buffers[0]) + x] += MAT(buffers[1])[y * LD(buffers[1]) + x];
}

static void variable_zero_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	*(double *)STARPU_VARIABLE_GET_PTR(buffers[0]) = 0.0;
}

static void variable_add_cpu(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	*(double *)STARPU_VARIABLE_GET_PTR(buffers[0]) += *(double *)STARPU_VARIABLE_GET_PTR(buffers[1]);
}

/* Codelets as DAHL declares them: no name, a regression model, modes. */
#define CODELET(fn, n, ...)                                                                       \
	static struct starpu_perfmodel fn##_model = {.type = STARPU_REGRESSION_BASED, .symbol = #fn}; \
	static struct starpu_codelet fn##_cl = {.cpu_funcs = {fn##_cpu}, .nbuffers = n, .modes = {__VA_ARGS__}, .model = &fn##_model}

CODELET(matrix_cross_correlation, 3, STARPU_R, STARPU_R, STARPU_W);
CODELET(conv_filter_gradient, 3, STARPU_R, STARPU_R, STARPU_REDUX);
CODELET(relu_forward, 1, STARPU_RW);
CODELET(pool_forward, 3, STARPU_R, STARPU_W, STARPU_W);
CODELET(dense_forward, 4, STARPU_R, STARPU_R, STARPU_R, STARPU_W);
CODELET(loss, 4, STARPU_R, STARPU_W, STARPU_REDUX, STARPU_REDUX);
CODELET(dense_weight_gradient, 4, STARPU_R, STARPU_R, STARPU_REDUX, STARPU_REDUX);
CODELET(dense_input_gradient, 3, STARPU_R, STARPU_R, STARPU_W);
CODELET(pool_backward, 3, STARPU_R, STARPU_R, STARPU_W);
CODELET(relu_backward, 2, STARPU_R, STARPU_RW);
CODELET(sgd, 2, STARPU_R, STARPU_RW);
static struct starpu_codelet matrix_zero_cl = {.cpu_funcs = {matrix_zero_cpu}, .nbuffers = 1, .modes = {STARPU_W}};
static struct starpu_codelet matrix_add_cl = {.cpu_funcs = {matrix_add_cpu}, .nbuffers = 2, .modes = {STARPU_RW, STARPU_R}};
static struct starpu_codelet variable_zero_cl = {.cpu_funcs = {variable_zero_cpu}, .nbuffers = 1, .modes = {STARPU_W}};
static struct starpu_codelet variable_add_cl = {.cpu_funcs = {variable_add_cpu}, .nbuffers = 2, .modes = {STARPU_RW, STARPU_R}};

/* ------------------------------------------------------------- the data */

struct model {
	float *filters;   /* filters x (kernel x kernel) */
	float *dense_w;   /* CLASSES x features */
	float *dense_b;   /* CLASSES */
};

static struct model new_model(const struct shape *s)
{
	struct model m;
	m.filters = malloc(sizeof(float) * s->filters * s->kernel * s->kernel);
	m.dense_w = malloc(sizeof(float) * CLASSES * s->features);
	m.dense_b = calloc(CLASSES, sizeof(float));
	unsigned seed = 7;
	for (unsigned i = 0; i < s->filters * s->kernel * s->kernel; i++) {
		seed = seed * 1103515245u + 12345u;
		m.filters[i] = ((float)((seed >> 16) % 1000) / 1000.f - 0.5f) / (float)s->kernel;
	}
	for (unsigned i = 0; i < CLASSES * s->features; i++) {
		seed = seed * 1103515245u + 12345u;
		m.dense_w[i] = ((float)((seed >> 16) % 1000) / 1000.f - 0.5f) / sqrtf((float)s->features);
	}
	return m;
}

static struct model copy_model(const struct shape *s, const struct model *from)
{
	struct model m = new_model(s);
	memcpy(m.filters, from->filters, sizeof(float) * s->filters * s->kernel * s->kernel);
	memcpy(m.dense_w, from->dense_w, sizeof(float) * CLASSES * s->features);
	memcpy(m.dense_b, from->dense_b, sizeof(float) * CLASSES);
	return m;
}

static void free_model(struct model *m)
{
	free(m->filters);
	free(m->dense_w);
	free(m->dense_b);
}

/* Synthetic images: class c lights a bar at a place of its own, plus noise. */
static void make_dataset(const struct shape *s, float *images, int *labels)
{
	unsigned seed = 42;
	for (unsigned n = 0; n < s->samples; n++) {
		int label = (int)(n % CLASSES);
		labels[n] = label;
		float *img = images + (size_t)n * s->img * s->img;
		for (unsigned i = 0; i < s->img * s->img; i++) {
			seed = seed * 1103515245u + 12345u;
			img[i] = (float)((seed >> 16) % 100) / 400.f;
		}
		unsigned row = (unsigned)label * (s->img - 2) / CLASSES + 1;
		for (unsigned x = 0; x < s->img; x++)
			img[row * s->img + x] += 1.f;
	}
}

/* ------------------------------------------------------- host reference */

static void host_training(const struct shape *s, struct model *m, const float *images, const int *labels)
{
	size_t out_area = (size_t)s->out * s->out, per_sample_out = s->filters * out_area;
	float *conv = malloc(sizeof(float) * per_sample_out), *mask = malloc(sizeof(float) * per_sample_out);
	float *dconv = malloc(sizeof(float) * per_sample_out);
	float *pool = malloc(sizeof(float) * s->features), *dpool = malloc(sizeof(float) * s->features);
	float *dfilters = malloc(sizeof(float) * s->filters * s->kernel * s->kernel);
	float *dw = malloc(sizeof(float) * CLASSES * s->features), db[CLASSES], logits[CLASSES], dlogits[CLASSES];
	for (unsigned epoch = 0; epoch < s->epochs; epoch++)
		for (unsigned first = 0; first + s->batch <= s->samples; first += s->batch) {
			memset(dfilters, 0, sizeof(float) * s->filters * s->kernel * s->kernel);
			memset(dw, 0, sizeof(float) * CLASSES * s->features);
			memset(db, 0, sizeof(db));
			for (unsigned n = first; n < first + s->batch; n++) {
				const float *img = images + (size_t)n * s->img * s->img;
				for (unsigned f = 0; f < s->filters; f++)
					cross_correlate(img, s->img, m->filters + f * s->kernel * s->kernel, s->kernel, s->kernel,
							conv + f * out_area, s->out, s->out);
				relu(conv, (unsigned)per_sample_out);
				max_pool(conv, s->out, s->filters, s->out, pool, s->pooled, mask);
				dense(pool, s->features, m->dense_w, m->dense_b, logits);
				int correct;
				softmax_loss(logits, labels[n], dlogits, &correct);
				for (unsigned c = 0; c < CLASSES; c++) {
					db[c] += dlogits[c];
					for (unsigned i = 0; i < s->features; i++)
						dw[c * s->features + i] += dlogits[c] * pool[i];
				}
				for (unsigned i = 0; i < s->features; i++) {
					float sum = 0.f;
					for (unsigned c = 0; c < CLASSES; c++)
						sum += m->dense_w[c * s->features + i] * dlogits[c];
					dpool[i] = sum;
				}
				max_unpool(dpool, s->pooled, mask, s->filters, s->out, dconv, s->out);
				for (size_t i = 0; i < per_sample_out; i++)
					if (conv[i] <= 0.f)
						dconv[i] = 0.f;
				for (unsigned f = 0; f < s->filters; f++)
					filter_gradient(img, s->img, dconv + f * out_area, s->out, s->out,
							dfilters + f * s->kernel * s->kernel, s->kernel, s->kernel);
			}
			float scale = s->lr / (float)s->batch;
			for (unsigned i = 0; i < s->filters * s->kernel * s->kernel; i++)
				m->filters[i] -= scale * dfilters[i];
			for (unsigned i = 0; i < CLASSES * s->features; i++)
				m->dense_w[i] -= scale * dw[i];
			for (unsigned c = 0; c < CLASSES; c++)
				m->dense_b[c] -= scale * db[c];
		}
	free(conv); free(mask); free(dconv); free(pool); free(dpool); free(dfilters); free(dw);
}

/* ---------------------------------------------------------- StarPU side */

static starpu_data_handle_t matrix(float *ptr, unsigned nx, unsigned ny)
{
	starpu_data_handle_t handle;
	starpu_matrix_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)ptr, nx, nx, ny, sizeof(float));
	return handle;
}

static starpu_data_handle_t vector(float *ptr, unsigned n)
{
	starpu_data_handle_t handle;
	starpu_vector_data_register(&handle, STARPU_MAIN_RAM, (uintptr_t)ptr, n, sizeof(float));
	return handle;
}

/* A partition plan cutting handle into parts (rows of matrices, runs of
 * vectors), as DAHL's partitions. */
static starpu_data_handle_t *plan(starpu_data_handle_t handle, unsigned parts)
{
	struct starpu_data_filter filter;
	memset(&filter, 0, sizeof(filter));
	filter.filter_func = starpu_data_get_interface_id(handle) == STARPU_MATRIX_INTERFACE_ID ? starpu_matrix_filter_vertical_block
												  : starpu_vector_filter_block;
	filter.nchildren = parts;
	starpu_data_handle_t *children = malloc(sizeof(*children) * parts);
	starpu_data_partition_plan(handle, &filter, children);
	return children;
}

#define SUBMIT(...)                                                                \
	do {                                                                           \
		int submitted = starpu_task_insert(__VA_ARGS__, 0);                    \
		STARPU_CHECK_RETURN_VALUE(submitted, "starpu_task_insert");             \
		tasks_submitted++;                                                     \
	} while (0)

struct parameters {
	starpu_data_handle_t filters, dense_w, dense_b;          /* the model */
	starpu_data_handle_t dfilters, ddense_w, ddense_b;       /* gradients (REDUX) */
	starpu_data_handle_t *filter_rows;                       /* a plan per filter */
	starpu_data_handle_t loss_sum, correct;                  /* per epoch (REDUX) */
};

/* One batch: forward, loss, backward, update (see the file's comment). */
static void train_batch(const struct shape *s, struct parameters *p, float *images, const int *labels)
{
	const unsigned b = s->batch, f = s->filters;
	size_t conv_floats = (size_t)b * f * s->out * s->out, pool_floats = (size_t)b * s->features;
	/* The arena: this batch's buffers, dropped at its end. */
	float *conv = malloc(sizeof(float) * conv_floats), *mask = malloc(sizeof(float) * conv_floats);
	float *dconv = malloc(sizeof(float) * conv_floats);
	float *pool = malloc(sizeof(float) * pool_floats), *dpool = malloc(sizeof(float) * pool_floats);
	float *logits = malloc(sizeof(float) * b * CLASSES), *dlogits = malloc(sizeof(float) * b * CLASSES);
	starpu_data_handle_t input_h = matrix(images, s->img, b * s->img);
	starpu_data_handle_t conv_h = matrix(conv, s->out, b * f * s->out), mask_h = matrix(mask, s->out, b * f * s->out);
	starpu_data_handle_t dconv_h = matrix(dconv, s->out, b * f * s->out);
	starpu_data_handle_t pool_h = matrix(pool, s->pooled, b * f * s->pooled), dpool_h = matrix(dpool, s->pooled, b * f * s->pooled);
	starpu_data_handle_t logits_h = vector(logits, b * CLASSES), dlogits_h = vector(dlogits, b * CLASSES);
	starpu_data_handle_t *input = plan(input_h, b), *conv_s = plan(conv_h, b), *mask_s = plan(mask_h, b);
	starpu_data_handle_t *dconv_s = plan(dconv_h, b), *pool_s = plan(pool_h, b), *dpool_s = plan(dpool_h, b);
	starpu_data_handle_t *logits_s = plan(logits_h, b), *dlogits_s = plan(dlogits_h, b);
	starpu_data_handle_t **conv_cells = NULL, **dconv_cells = NULL;
	if (!s->per_sample) {
		conv_cells = malloc(sizeof(*conv_cells) * b);
		dconv_cells = malloc(sizeof(*dconv_cells) * b);
		for (unsigned n = 0; n < b; n++) {
			conv_cells[n] = plan(conv_s[n], f); /* a plan on a child: two levels */
			dconv_cells[n] = plan(dconv_s[n], f);
		}
	}
	const size_t shape_size = sizeof(*s);

	/* Convolution forward. */
	starpu_data_partition_readonly_submit(input_h, b, input);
	starpu_data_partition_submit(conv_h, b, conv_s);
	if (!s->per_sample)
		starpu_data_partition_readonly_submit(p->filters, f, p->filter_rows);
	for (unsigned n = 0; n < b; n++) {
		if (s->per_sample) {
			SUBMIT(&matrix_cross_correlation_cl, STARPU_R, input[n], STARPU_R, p->filters, STARPU_W, conv_s[n]);
			continue;
		}
		starpu_data_partition_submit(conv_s[n], f, conv_cells[n]);
		for (unsigned k = 0; k < f; k++)
			SUBMIT(&matrix_cross_correlation_cl, STARPU_R, input[n], STARPU_R, p->filter_rows[k], STARPU_W, conv_cells[n][k]);
		starpu_data_unpartition_submit(conv_s[n], f, conv_cells[n], STARPU_MAIN_RAM);
	}
	if (!s->per_sample)
		starpu_data_unpartition_submit(p->filters, f, p->filter_rows, STARPU_MAIN_RAM);

	/* ReLU, pooling, dense, loss: per sample. */
	starpu_data_partition_submit(pool_h, b, pool_s);
	starpu_data_partition_submit(mask_h, b, mask_s);
	starpu_data_partition_submit(logits_h, b, logits_s);
	starpu_data_partition_submit(dlogits_h, b, dlogits_s);
	for (unsigned n = 0; n < b; n++) {
		int label = labels[n];
		SUBMIT(&relu_forward_cl, STARPU_RW, conv_s[n]);
		SUBMIT(&pool_forward_cl, STARPU_VALUE, s, shape_size, STARPU_R, conv_s[n], STARPU_W, pool_s[n], STARPU_W, mask_s[n]);
		SUBMIT(&dense_forward_cl, STARPU_VALUE, s, shape_size, STARPU_R, pool_s[n], STARPU_R, p->dense_w, STARPU_R,
		       p->dense_b, STARPU_W, logits_s[n]);
		SUBMIT(&loss_cl, STARPU_VALUE, &label, sizeof(label), STARPU_R, logits_s[n], STARPU_W, dlogits_s[n],
		       STARPU_REDUX, p->loss_sum, STARPU_REDUX, p->correct);
	}

	/* Backward. */
	starpu_data_partition_submit(dpool_h, b, dpool_s);
	starpu_data_partition_submit(dconv_h, b, dconv_s);
	for (unsigned n = 0; n < b; n++) {
		SUBMIT(&dense_weight_gradient_cl, STARPU_VALUE, s, shape_size, STARPU_R, dlogits_s[n], STARPU_R, pool_s[n],
		       STARPU_REDUX, p->ddense_w, STARPU_REDUX, p->ddense_b);
		SUBMIT(&dense_input_gradient_cl, STARPU_VALUE, s, shape_size, STARPU_R, dlogits_s[n], STARPU_R, p->dense_w,
		       STARPU_W, dpool_s[n]);
		SUBMIT(&pool_backward_cl, STARPU_VALUE, s, shape_size, STARPU_R, dpool_s[n], STARPU_R, mask_s[n], STARPU_W, dconv_s[n]);
		SUBMIT(&relu_backward_cl, STARPU_R, conv_s[n], STARPU_RW, dconv_s[n]);
	}
	for (unsigned n = 0; n < b; n++) {
		if (s->per_sample) {
			unsigned first = 0;
			SUBMIT(&conv_filter_gradient_cl, STARPU_VALUE, s, shape_size, STARPU_VALUE, &first, sizeof(first), STARPU_R,
			       input[n], STARPU_R, dconv_s[n], STARPU_REDUX, p->dfilters);
			continue;
		}
		starpu_data_partition_readonly_submit(dconv_s[n], f, dconv_cells[n]);
		for (unsigned k = 0; k < f; k++)
			SUBMIT(&conv_filter_gradient_cl, STARPU_VALUE, s, shape_size, STARPU_VALUE, &k, sizeof(k), STARPU_R, input[n],
			       STARPU_R, dconv_cells[n][k], STARPU_REDUX, p->dfilters);
		starpu_data_unpartition_submit(dconv_s[n], f, dconv_cells[n], STARPU_MAIN_RAM);
	}
	starpu_data_handle_t parents[] = {input_h, conv_h, mask_h, dconv_h, pool_h, dpool_h, logits_h, dlogits_h};
	starpu_data_handle_t *children[] = {input, conv_s, mask_s, dconv_s, pool_s, dpool_s, logits_s, dlogits_s};
	for (unsigned i = 0; i < sizeof(parents) / sizeof(parents[0]); i++)
		starpu_data_unpartition_submit(parents[i], b, children[i], STARPU_MAIN_RAM);

	/* Update; the gradients' values are dropped: the next batch's
	 * reductions start from zero. */
	float scale = s->lr / (float)b;
	SUBMIT(&sgd_cl, STARPU_VALUE, &scale, sizeof(scale), STARPU_R, p->dfilters, STARPU_RW, p->filters);
	SUBMIT(&sgd_cl, STARPU_VALUE, &scale, sizeof(scale), STARPU_R, p->ddense_w, STARPU_RW, p->dense_w);
	SUBMIT(&sgd_cl, STARPU_VALUE, &scale, sizeof(scale), STARPU_R, p->ddense_b, STARPU_RW, p->dense_b);
	starpu_data_invalidate_submit(p->dfilters);
	starpu_data_invalidate_submit(p->ddense_w);
	starpu_data_invalidate_submit(p->ddense_b);

	/* Arena reset: plans cleaned, buffers dropped without write-back. */
	if (!s->per_sample) {
		for (unsigned n = 0; n < b; n++) {
			starpu_data_partition_clean(conv_s[n], f, conv_cells[n]);
			starpu_data_partition_clean(dconv_s[n], f, dconv_cells[n]);
			free(conv_cells[n]);
			free(dconv_cells[n]);
		}
		free(conv_cells);
		free(dconv_cells);
	}
	for (unsigned i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		starpu_data_partition_clean(parents[i], b, children[i]);
		free(children[i]);
		if (parents[i] == input_h)
			starpu_data_unregister_submit(parents[i]); /* the dataset stays */
		else
			starpu_data_unregister_no_coherency(parents[i]);
	}
	free(conv); free(mask); free(dconv); free(pool); free(dpool); free(logits); free(dlogits);
}

static float max_relative_difference(const float *a, const float *b, size_t n)
{
	float worst = 0.f;
	for (size_t i = 0; i < n; i++) {
		float scale = fabsf(b[i]) > 1e-3f ? fabsf(b[i]) : 1e-3f;
		float difference = fabsf(a[i] - b[i]) / scale;
		if (difference > worst)
			worst = difference;
	}
	return worst;
}

static int parse(int argc, char **argv, struct shape *s)
{
	*s = (struct shape){.img = 28, .kernel = 5, .filters = 8, .samples = 512, .batch = 64, .epochs = 2, .lr = 0.05f};
	for (int i = 1; i < argc; i++) {
		const char *option = argv[i];
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned *target = !strcmp(option, "-img") ? &s->img : !strcmp(option, "-kernel") ? &s->kernel
				 : !strcmp(option, "-filters") ? &s->filters : !strcmp(option, "-samples") ? &s->samples
				 : !strcmp(option, "-batch") ? &s->batch : !strcmp(option, "-epochs") ? &s->epochs : NULL;
		if (target && value && atoi(value) > 0) {
			*target = (unsigned)atoi(value);
			i++;
		} else if (!strcmp(option, "-lr") && value && atof(value) > 0) {
			s->lr = (float)atof(value);
			i++;
		} else if (!strcmp(option, "-g") && value && (!strcmp(value, "fine") || !strcmp(value, "sample"))) {
			s->per_sample = !strcmp(value, "sample");
			i++;
		} else {
			fprintf(stderr, "cnn_training: bad option '%s'; usage: %s [-img N] [-kernel K] [-filters F] [-samples S] "
				"[-batch B] [-epochs E] [-g fine|sample] [-lr L] (sizes are positive integers)\n", option, argv[0]);
			return -1;
		}
	}
	if (s->kernel > s->img || (s->img - s->kernel + 1) % 2 != 0 || s->batch > s->samples) {
		fprintf(stderr, "cnn_training: need kernel <= img, an even convolution output (img - kernel + 1) and batch <= samples\n");
		return -1;
	}
	s->out = s->img - s->kernel + 1;
	s->pooled = s->out / 2;
	s->features = s->filters * s->pooled * s->pooled;
	return 0;
}

int main(int argc, char **argv)
{
	struct shape s;
	if (parse(argc, argv, &s) != 0)
		return 2;
	float *images = malloc(sizeof(float) * s.samples * s.img * s.img);
	int *labels = malloc(sizeof(int) * s.samples);
	make_dataset(&s, images, labels);
	struct model model = new_model(&s), reference = copy_model(&s, &model);
	host_training(&s, &reference, images, labels);

	int ret = starpu_init(NULL);
	if (ret == -ENODEV)
		return 77;
	STARPU_CHECK_RETURN_VALUE(ret, "starpu_init");
	starpu_profiling_status_set(STARPU_PROFILING_ENABLE);

	struct parameters p;
	unsigned filter_rows = s.filters * s.kernel;
	float *dfilters = calloc(filter_rows * s.kernel, sizeof(float)), *ddense_w = calloc(CLASSES * s.features, sizeof(float));
	float ddense_b[CLASSES] = {0};
	double loss_sum = 0.0, correct = 0.0;
	p.filters = matrix(model.filters, s.kernel, filter_rows);
	p.dense_w = matrix(model.dense_w, s.features, CLASSES);
	p.dense_b = matrix(model.dense_b, CLASSES, 1);
	p.dfilters = matrix(dfilters, s.kernel, filter_rows);
	p.ddense_w = matrix(ddense_w, s.features, CLASSES);
	p.ddense_b = matrix(ddense_b, CLASSES, 1);
	p.filter_rows = plan(p.filters, s.filters);
	starpu_variable_data_register(&p.loss_sum, STARPU_MAIN_RAM, (uintptr_t)&loss_sum, sizeof(loss_sum));
	starpu_variable_data_register(&p.correct, STARPU_MAIN_RAM, (uintptr_t)&correct, sizeof(correct));
	starpu_data_handle_t gradients[] = {p.dfilters, p.ddense_w, p.ddense_b};
	for (unsigned i = 0; i < 3; i++)
		starpu_data_set_reduction_methods(gradients[i], &matrix_add_cl, &matrix_zero_cl);
	starpu_data_set_reduction_methods(p.loss_sum, &variable_add_cl, &variable_zero_cl);
	starpu_data_set_reduction_methods(p.correct, &variable_add_cl, &variable_zero_cl);

	printf("cnn_training: %u images of %ux%u, %u filters of %ux%u, batches of %u, %s granularity, %u CPU workers\n", s.samples,
	       s.img, s.img, s.filters, s.kernel, s.kernel, s.batch, s.per_sample ? "per-sample" : "DAHL's (per sample and filter)",
	       starpu_cpu_worker_get_count());
	double total_seconds = 0.0;
	for (unsigned epoch = 0; epoch < s.epochs; epoch++) {
		double start = starpu_timing_now();
		for (unsigned first = 0; first + s.batch <= s.samples; first += s.batch)
			train_batch(&s, &p, images + (size_t)first * s.img * s.img, labels + first);
		starpu_data_acquire(p.loss_sum, STARPU_R);
		starpu_data_acquire(p.correct, STARPU_R);
		starpu_task_wait_for_all();
		double seconds = (starpu_timing_now() - start) * 1e-6;
		total_seconds += seconds;
		unsigned seen = s.samples / s.batch * s.batch;
		printf("epoch %u: loss %.6f, accuracy %.4f, %.3f s\n", epoch, loss_sum / seen, correct / seen, seconds);
		starpu_data_release(p.loss_sum);
		starpu_data_release(p.correct);
		starpu_data_invalidate_submit(p.loss_sum); /* the next epoch's sums start from zero */
		starpu_data_invalidate_submit(p.correct);
	}

	printf("tasks submitted: %lu, in batches of starpu-fusing: %.0f (%.0f batches)\n", tasks_submitted, members_in_batches, batches);
	for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
		struct starpu_profiling_worker_info info;
		if (starpu_profiling_worker_get_info((int)w, &info) != 0)
			continue;
		double total = starpu_timing_timespec_to_us(&info.total_time);
		double executing = starpu_timing_timespec_to_us(&info.executing_time);
		printf("worker %u: executing %.1f%% of %.3f s\n", w, total > 0 ? 100.0 * executing / total : 0.0, total * 1e-6);
	}
	printf("time: %.3f s for %u epochs\n", total_seconds, s.epochs);

	starpu_data_partition_clean(p.filters, s.filters, p.filter_rows);
	starpu_data_handle_t all[] = {p.filters, p.dense_w, p.dense_b, p.dfilters, p.ddense_w, p.ddense_b};
	for (unsigned i = 0; i < 6; i++)
		starpu_data_unregister(all[i]);
	starpu_data_unregister(p.loss_sum);
	starpu_data_unregister(p.correct);
	starpu_shutdown();

	float worst = max_relative_difference(model.filters, reference.filters, filter_rows * s.kernel);
	float dense_worst = max_relative_difference(model.dense_w, reference.dense_w, (size_t)CLASSES * s.features);
	float bias_worst = max_relative_difference(model.dense_b, reference.dense_b, CLASSES);
	if (dense_worst > worst)
		worst = dense_worst;
	if (bias_worst > worst)
		worst = bias_worst;
	int ok = worst <= 1e-3f;
	printf("check against the host: largest relative difference %.2g: %s\n", worst, ok ? "OK" : "FAILED");
	free(p.filter_rows); free(dfilters); free(ddense_w); free(images); free(labels);
	free_model(&model);
	free_model(&reference);
	return ok ? 0 : 1;
}
