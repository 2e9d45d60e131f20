/* Ways a program selects a policy, for tests/e2e/selection.sh: each mode
 * starts StarPU one way and prints "policy: NAME" for the policy it got.
 *
 *   getenv-race   another thread reads getenv("STARPU_SCHED") throughout
 *                 starpu_init; exits 1 if it ever finds it unset (the
 *                 StarPU 1.3 selection must not change the environment)
 *   conf-name     starpu_conf::sched_policy_name = "fusing", no STARPU_SCHED
 *   conf-struct   starpu_conf::sched_policy = StarPU's eager
 *   ctx-by-name   a context created with STARPU_SCHED_CTX_POLICY_NAME "fusing"
 *                 (prints that context's policy)
 *   limits        starpu_set_limit_min/max_submitted_tasks (StarPU 1.4; exits
 *                 77 on 1.3, which has no such functions) */
#include <starpu.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int initialising = 1;
static atomic_long unset_reads = 0;

static void *read_environment(void *arg)
{
	(void)arg;
	while (atomic_load(&initialising))
		if (!getenv("STARPU_SCHED"))
			atomic_fetch_add(&unset_reads, 1);
	return NULL;
}

static struct starpu_sched_policy *predefined(const char *name)
{
	struct starpu_sched_policy **policy;
	for (policy = starpu_sched_get_predefined_policies(); *policy; policy++)
		if ((*policy)->policy_name && strcmp((*policy)->policy_name, name) == 0)
			return *policy;
	return NULL;
}

static void print_policy(unsigned ctx)
{
	struct starpu_sched_policy *policy = starpu_sched_ctx_get_sched_policy(ctx);
	printf("policy: %s\n", policy && policy->policy_name ? policy->policy_name : "(none)");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	pthread_t reader;
	int reading = 0;

	if (strcmp(mode, "getenv-race") == 0) {
		reading = pthread_create(&reader, NULL, read_environment, NULL) == 0;
	} else if (strcmp(mode, "conf-name") == 0) {
		conf.sched_policy_name = "fusing";
	} else if (strcmp(mode, "conf-struct") == 0) {
		conf.sched_policy = predefined("eager");
	} else if (strcmp(mode, "limits") == 0) {
#if STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION < 4
		printf("no run-time submission limits in StarPU %d.%d\n", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION);
		return 77;
#endif
	} else if (strcmp(mode, "ctx-by-name") != 0) {
		fprintf(stderr, "usage: %s getenv-race|conf-name|conf-struct|ctx-by-name|limits\n", argv[0]);
		return 2;
	}
	int ret = starpu_init(&conf);
	atomic_store(&initialising, 0);
	if (reading)
		pthread_join(reader, NULL);
	if (ret != 0)
		return ret == -ENODEV ? 77 : 1;

	if (strcmp(mode, "ctx-by-name") == 0) {
		int workers[STARPU_NMAXWORKERS];
		int n = starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, workers, STARPU_NMAXWORKERS);
		unsigned ctx = starpu_sched_ctx_create(workers, n, "by name", STARPU_SCHED_CTX_POLICY_NAME, "fusing",
						       STARPU_SCHED_CTX_POLICY_MIN_PRIO, -4, STARPU_SCHED_CTX_POLICY_MAX_PRIO, 4, 0);
		print_policy(ctx);
		starpu_sched_ctx_delete(ctx);
	} else {
		print_policy(0);
	}
#if !(STARPU_MAJOR_VERSION == 1 && STARPU_MINOR_VERSION < 4)
	if (strcmp(mode, "limits") == 0) {
		starpu_set_limit_min_submitted_tasks(10);
		starpu_set_limit_max_submitted_tasks(20);
		printf("limits set\n");
	}
#endif
	starpu_shutdown();
	if (atomic_load(&unset_reads)) {
		printf("STARPU_SCHED read as unset %ld times during starpu_init\n", (long)atomic_load(&unset_reads));
		return 1;
	}
	return 0;
}
