/* Ensures batches close exactly on the documented triggers: full, expired,
 * or flushed on demand, and that no member is lost or duplicated. */
#include "ready/batch_buffers.h"
#include "tests/cmocka.hpp"

#include <algorithm>
#include <cmath>

using Buffers = fusing::BatchBuffers<int, int>;

/* A clock stopped at t. */
static auto at(double t)
{
	return [t] { return t; };
}

static void batch_buffers_close_when_full(void **)
{
	Buffers buffers(3, 1000.0);
	assert_false(buffers.add(7, 1, at(0.0), 1000).has_value());
	assert_false(buffers.add(7, 2, at(0.0), 1000).has_value());
	assert_false(buffers.add(8, 10, at(0.0), 1000).has_value());
	auto full = buffers.add(7, 3, at(0.0), 1000);
	assert_true(full.has_value());
	assert_int_equal(full->family, 7);
	assert_true((full->members == std::vector<int>{1, 2, 3}));
	assert_int_equal(buffers.buffered(), 1);
	/* The family's next batch starts empty. */
	assert_false(buffers.add(7, 4, at(0.0), 1000).has_value());
	assert_int_equal(buffers.buffered(), 2);
}

static void batch_buffers_expire_after_max_delay(void **)
{
	Buffers buffers(64, 100.0);
	buffers.add(1, 1, at(10.0), 1000);
	buffers.add(2, 2, at(50.0), 1000);
	buffers.add(1, 3, at(90.0), 1000); /* age counts from the batch's first member */
	assert_true(buffers.next_deadline_us() == 110.0);
	assert_true(buffers.take_expired(109.0).empty());
	auto expired = buffers.take_expired(110.0);
	assert_int_equal(expired.size(), 1);
	assert_int_equal(expired[0].family, 1);
	assert_int_equal(expired[0].members.size(), 2);
	assert_true(buffers.next_deadline_us() == 150.0);
	assert_int_equal(buffers.take_expired(1e9).size(), 1);
	assert_true(std::isinf(buffers.next_deadline_us()));
	assert_int_equal(buffers.buffered(), 0);
}

static void batch_buffers_take_all_selected_families(void **)
{
	Buffers buffers(64, 1e6);
	for (int i = 0; i < 10; i++)
		buffers.add(i % 3, i, at(0.0), 1000);
	auto odd = buffers.take_all([](int family) { return family == 1; });
	assert_int_equal(odd.size(), 1);
	assert_true((odd[0].members == std::vector<int>{1, 4, 7}));
	auto rest = buffers.take_all([](int) { return true; });
	assert_int_equal(rest.size(), 2);
	std::vector<int> all;
	for (auto &batch : rest)
		all.insert(all.end(), batch.members.begin(), batch.members.end());
	std::sort(all.begin(), all.end());
	assert_true((all == std::vector<int>{0, 2, 3, 5, 6, 8, 9}));
	assert_int_equal(buffers.buffered(), 0);
	assert_true(buffers.take_all([](int) { return true; }).empty());
}

static void batch_buffers_close_at_the_limit_of_each_add(void **)
{
	Buffers buffers(64, 1000.0);
	assert_false(buffers.add(1, 1, at(0.0), 3).has_value());
	assert_false(buffers.add(1, 2, at(0.0), 3).has_value());
	auto full = buffers.add(1, 3, at(0.0), 3);
	assert_true(full.has_value());
	assert_int_equal(full->members.size(), 3);
	/* The limit never exceeds max_members. */
	Buffers capped(2, 1000.0);
	assert_false(capped.add(1, 1, at(0.0), 100).has_value());
	assert_true(capped.add(1, 2, at(0.0), 100).has_value());
}

static void batch_buffers_batch_of_one_closes_at_once(void **)
{
	Buffers buffers(1, 1000.0);
	auto full = buffers.add(5, 42, at(0.0), 1000);
	assert_true(full.has_value());
	assert_true((full->members == std::vector<int>{42}));
	assert_int_equal(buffers.buffered(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(batch_buffers_close_when_full),
		cmocka_unit_test(batch_buffers_expire_after_max_delay),
		cmocka_unit_test(batch_buffers_take_all_selected_families),
		cmocka_unit_test(batch_buffers_close_at_the_limit_of_each_add),
		cmocka_unit_test(batch_buffers_batch_of_one_closes_at_once),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
