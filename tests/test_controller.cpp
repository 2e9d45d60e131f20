/* Ensures the granularity controller follows the rule documented in
 * ready/controller.h and the README, as a pure function of predictions,
 * target, worker state and batch contents. */
#include "core/codelet_observations.h"
#include "ready/controller.h"
#include "tests/cmocka.hpp"

#include <numeric>

using namespace fusing;

static const Targets targets{1000.0 /* 1 ms */, 2, 64, 500.0 /* generic execution up to 500 us */};

static void controller_runs_tasks_at_or_above_target_unfused(void **)
{
	assert_true(decide_hold(1000.0, targets, false, true, true, true) == UnfusedReason::predicted_above_target);
	assert_true(decide_hold(5000.0, targets, false, true, true, false) == UnfusedReason::predicted_above_target);
	assert_true(decide_hold(999.0, targets, true, true, true, false) == UnfusedReason::none);
}

static void controller_fuses_long_tasks_only_with_a_batched_kernel(void **)
{
	assert_true(decide_hold(600.0, targets, false, true, true, true) == UnfusedReason::predicted_above_max_task);
	assert_true(decide_hold(600.0, targets, true, true, true, true) == UnfusedReason::none);
	assert_true(decide_hold(500.0, targets, false, true, true, true) == UnfusedReason::none); /* the bound itself still fuses */
	assert_true(decide_hold(NAN, targets, false, true, true, true) == UnfusedReason::none);   /* unknown: its first batch measures it */
	/* The target still bounds batched families. */
	assert_true(decide_hold(1000.0, targets, true, true, true, true) == UnfusedReason::predicted_above_target);
	assert_false(too_long_for_generic_execution(500.0, targets));
	assert_true(too_long_for_generic_execution(500.5, targets));
	assert_false(too_long_for_generic_execution(NAN, targets));
}

static void controller_stops_holding_when_batches_stay_tiny(void **)
{
	assert_true(decide_hold(10.0, targets, false, false, true, false) == UnfusedReason::batches_too_small);
	/* An idle worker is the first reason; hold=always overrides both. */
	assert_true(decide_hold(10.0, targets, false, false, false, false) == UnfusedReason::worker_was_idle);
	assert_true(decide_hold(10.0, targets, false, false, true, true) == UnfusedReason::none);
}

static void observations_stop_holding_tiny_batches_then_retry(void **)
{
	static struct starpu_codelet narrow, wide;
	CodeletObservations observations, other_observations;
	assert_true(observations.worth_holding(&narrow)); /* nothing known yet */
	for (long i = 0; i + 1 < CodeletObservations::batches_before_judging; i++)
		observations.record_batch_members(&narrow, 1);
	assert_true(observations.worth_holding(&narrow)); /* too few batches to judge */
	for (int i = 0; i < 8; i++) {
		observations.record_batch_members(&narrow, 1);
		other_observations.record_batch_members(&wide, 12);
	}
	assert_true(other_observations.worth_holding(&wide));
	long refused = 0;
	while (!observations.worth_holding(&narrow))
		refused++;
	assert_int_equal(refused, CodeletObservations::tasks_between_retries - 1);
	/* The retry forgot the sizes: holding goes on until batches say otherwise. */
	assert_true(observations.worth_holding(&narrow));
	/* Still tiny after the retry: the next wait is twice as long. */
	for (long i = 0; i < CodeletObservations::batches_before_judging; i++)
		observations.record_batch_members(&narrow, 1);
	refused = 0;
	while (!observations.worth_holding(&narrow))
		refused++;
	assert_int_equal(refused, 2 * CodeletObservations::tasks_between_retries - 1);
	/* Good batches reset the wait. */
	for (long i = 0; i < CodeletObservations::batches_before_judging; i++)
		observations.record_batch_members(&narrow, 5);
	assert_true(observations.worth_holding(&narrow));
	for (int i = 0; i < 12; i++)
		observations.record_batch_members(&narrow, 1);
	refused = 0;
	while (!observations.worth_holding(&narrow))
		refused++;
	assert_int_equal(refused, CodeletObservations::tasks_between_retries - 1);
	/* Durations are kept apart from sizes. */
	assert_true(std::isnan(observations.member_us(&narrow)));
	observations.record_member_us(&narrow, 40.0);
	observations.record_member_us(&narrow, 80.0);
	assert_true(observations.member_us(&narrow) == 50.0); /* 3/4 old + 1/4 new */
	observations.record_member_us(&narrow, 5000.0);      /* a preempted batch: counts as 4 x 50 */
	assert_true(observations.member_us(&narrow) == 87.5);
}

/* Codelets side by side in memory, as a program's static codelets are: each
 * keeps its own observations.  In the direct-mapped table of 64 slots this
 * replaced, codelets sharing a slot erased each other's. */
static void observations_keep_every_codelet_apart(void **)
{
	static struct starpu_codelet codelets[CodeletObservations::max_codelets + 1];
	CodeletObservations observations;
	const std::size_t last = CodeletObservations::max_codelets;
	for (std::size_t i = 0; i < last; i++) {
		observations.record_member_us(&codelets[i], static_cast<double>(i + 1));
		for (long b = 0; b < CodeletObservations::batches_before_judging; b++)
			observations.record_batch_members(&codelets[i], i % 2 ? 1 : 8);
	}
	for (std::size_t i = 0; i < last; i++) {
		assert_true(observations.member_us(&codelets[i]) == static_cast<double>(i + 1));
		assert_true(observations.worth_holding(&codelets[i]) == (i % 2 == 0));
	}
	/* One codelet too many: not observed, and no other forgotten. */
	observations.record_member_us(&codelets[last], 1.0);
	assert_true(std::isnan(observations.member_us(&codelets[last])));
	assert_true(observations.worth_holding(&codelets[last]));
	for (std::size_t i = 0; i < last; i++)
		assert_true(observations.member_us(&codelets[i]) == static_cast<double>(i + 1));
}

static void controller_holds_only_while_every_worker_is_busy(void **)
{
	assert_true(decide_hold(10.0, targets, false, true, false, false) == UnfusedReason::worker_was_idle);
	assert_true(decide_hold(NAN, targets, false, true, false, false) == UnfusedReason::worker_was_idle);
	assert_true(decide_hold(NAN, targets, false, true, true, false) == UnfusedReason::none);
	/* STARPU_FUSING_HOLD=always holds even when workers idle. */
	assert_true(decide_hold(10.0, targets, false, true, false, true) == UnfusedReason::none);
}

static void controller_sizes_batches_to_reach_the_target(void **)
{
	assert_int_equal(batch_size_for(100.0, targets), 10);  /* 10 x 100 us = 1 ms */
	assert_int_equal(batch_size_for(300.0, targets), 4);   /* rounds up: 1.2 ms */
	assert_int_equal(batch_size_for(1.0, targets), 64);    /* capped by max_members */
	assert_int_equal(batch_size_for(900.0, targets), 2);   /* at least min_members */
	/* No prediction: the cap (batches of unmeasured families are split
	 * over the workers instead, see the engine). */
	assert_int_equal(batch_size_for(NAN, targets), 64);
	assert_int_equal(batch_size_for(NAN, Targets{1000.0, 8, 16, 500.0}), 16);
	assert_int_equal(batch_size_for(0.0, targets), 64);
	Targets single{1000.0, 1, 1, 500.0};
	assert_int_equal(batch_size_for(10.0, single), 1);
}

static void controller_splits_batches_over_idle_workers(void **)
{
	auto sizes = split_for_workers(10, 4);
	assert_true((sizes == std::vector<std::size_t>{3, 3, 2, 2}));
	assert_true((split_for_workers(3, 8) == std::vector<std::size_t>{1, 1, 1}));
	assert_true((split_for_workers(5, 1) == std::vector<std::size_t>{5}));
	assert_true((split_for_workers(5, 0) == std::vector<std::size_t>{5}));
	for (std::size_t members = 1; members < 50; members++)
		for (unsigned workers = 1; workers < 9; workers++) {
			auto parts = split_for_workers(members, workers);
			assert_int_equal(std::accumulate(parts.begin(), parts.end(), std::size_t(0)), members);
			for (std::size_t part : parts)
				assert_true(part >= 1);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(controller_runs_tasks_at_or_above_target_unfused),
		cmocka_unit_test(controller_fuses_long_tasks_only_with_a_batched_kernel),
		cmocka_unit_test(controller_holds_only_while_every_worker_is_busy),
		cmocka_unit_test(controller_stops_holding_when_batches_stay_tiny),
		cmocka_unit_test(observations_stop_holding_tiny_batches_then_retry),
		cmocka_unit_test(observations_keep_every_codelet_apart),
		cmocka_unit_test(controller_sizes_batches_to_reach_the_target),
		cmocka_unit_test(controller_splits_batches_over_idle_workers),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
