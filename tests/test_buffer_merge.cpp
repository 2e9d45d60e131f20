/* Ensures the proxy's buffer list names each handle once, with the OR of its
 * modes, and maps every member use back to the right position. */
#include "core/buffer_merge.h"
#include "tests/cmocka.hpp"

using fusing::merge_buffers;

static void buffer_merge_keeps_distinct_handles_in_order(void **)
{
	auto merged = merge_buffers<int, int>({10, 20, 30}, {1, 2, 3});
	assert_true((merged.handles == std::vector<int>{10, 20, 30}));
	assert_true((merged.modes == std::vector<int>{1, 2, 3}));
	assert_true((merged.index_of_use == std::vector<unsigned>{0, 1, 2}));
}

static void buffer_merge_shares_a_handle_read_by_every_member(void **)
{
	/* Two buffers per member: a shared weight (read, mode 1) and an output
	 * (write, mode 2). */
	std::vector<int> handles, modes;
	for (int member = 0; member < 100; member++) {
		handles.push_back(7);
		modes.push_back(1);
		handles.push_back(1000 + member);
		modes.push_back(2);
	}
	auto merged = merge_buffers(handles, modes);
	assert_int_equal(merged.handles.size(), 101);
	assert_int_equal(merged.handles[0], 7);
	assert_int_equal(merged.modes[0], 1);
	for (int member = 0; member < 100; member++) {
		unsigned shared = merged.index_of_use[2 * member];
		unsigned own = merged.index_of_use[2 * member + 1];
		assert_int_equal(merged.handles[shared], 7);
		assert_int_equal(merged.handles[own], 1000 + member);
		assert_int_equal(merged.modes[own], 2);
	}
}

static void buffer_merge_ors_the_modes_of_one_handle(void **)
{
	auto merged = merge_buffers<int, int>({5, 5, 6}, {1, 2, 1});
	assert_int_equal(merged.handles.size(), 2);
	assert_int_equal(merged.modes[0], 3);
	assert_true((merged.index_of_use == std::vector<unsigned>{0, 0, 1}));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buffer_merge_keeps_distinct_handles_in_order),
		cmocka_unit_test(buffer_merge_shares_a_handle_read_by_every_member),
		cmocka_unit_test(buffer_merge_ors_the_modes_of_one_handle),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
