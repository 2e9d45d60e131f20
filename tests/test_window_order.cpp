/* Ensures the order rule of submission-time fusion (submission/window_order.h)
 * keeps every conflicting pair of tasks in submission order: crafted
 * sequences (W/R/RW across groups, shared reads, one handle twice in a
 * task), and random sequences grouped every allowed way, executed group by
 * group and compared with one-by-one execution by an oracle that is first
 * shown to catch a placement the rule forbids. */
#include "submission/window_order.h"
#include "tests/cmocka.hpp"

#include <cstdint>
#include <map>
#include <random>
#include <vector>

using namespace fusing;

namespace {

using Accesses = std::vector<Access<int>>;

Accesses reads(std::initializer_list<int> handles)
{
	Accesses accesses;
	for (int h : handles)
		accesses.push_back({h, false});
	return accesses;
}

Accesses writes(std::initializer_list<int> handles)
{
	Accesses accesses;
	for (int h : handles)
		accesses.push_back({h, true});
	return accesses;
}

void window_order_reader_may_join_its_writer_or_later(void **)
{
	WindowOrder<int> order;
	assert_int_equal(order.open(writes({1})), 0); /* A writes h1 */
	assert_int_equal(order.open(writes({2})), 1); /* B writes h2 */
	Accesses c = reads({1, 2});                     /* C reads both */
	assert_int_equal(order.first_allowed_group(c), 1);
	assert_false(order.join(0, c)); /* before B: would read h2 too early */
	assert_true(order.join(1, c));
	assert_false(order.join(2, c)); /* no such group */
}

void window_order_shared_reads_do_not_conflict(void **)
{
	WindowOrder<int> order;
	order.open(reads({7}));
	order.open(reads({7}));
	assert_int_equal(order.first_allowed_group(reads({7})), 0);
	assert_true(order.join(0, reads({7})));
	/* A writer must follow every reader. */
	assert_int_equal(order.first_allowed_group(writes({7})), 1);
	assert_false(order.join(0, writes({7})));
	assert_true(order.join(1, writes({7})));
	/* ...and later readers, that writer. */
	assert_int_equal(order.first_allowed_group(reads({7})), 1);
}

void window_order_write_after_write_keeps_order(void **)
{
	WindowOrder<int> order;
	order.open(writes({3}));
	order.open(reads({4}));
	order.join(1, writes({3}));           /* group 1 now writes h3 too */
	Accesses rw = {{3, false}, {3, true}}; /* the same handle twice: R and W */
	assert_int_equal(order.first_allowed_group(rw), 1);
	assert_false(order.join(0, rw));
	assert_true(order.join(1, rw));
}

void window_order_unrelated_tasks_may_join_any_group(void **)
{
	WindowOrder<int> order;
	order.open(writes({1}));
	order.open(writes({2}));
	order.open(writes({3}));
	assert_int_equal(order.first_allowed_group(writes({9})), 0);
	assert_true(order.join(0, writes({9})));
	order.clear();
	assert_int_equal(order.groups_opened(), 0);
	assert_int_equal(order.first_allowed_group(writes({1})), 0);
}

/* ------------------------------------------------------------ the oracle */

struct Task {
	Accesses accesses;
};

/* What each task saw of each handle it reads (the version: number of
 * writes before it), executing tasks in the given order. */
std::vector<std::map<int, int>> execute(const std::vector<Task> &tasks, const std::vector<std::size_t> &order)
{
	std::vector<std::map<int, int>> seen(tasks.size());
	std::map<int, int> version;
	for (std::size_t t : order) {
		for (const Access<int> &access : tasks[t].accesses)
			if (!access.writes)
				seen[t][access.handle] = version[access.handle];
		for (const Access<int> &access : tasks[t].accesses)
			if (access.writes) {
				seen[t][-1 - access.handle] = version[access.handle]; /* what it overwrote */
				version[access.handle]++;
			}
	}
	return seen;
}

/* Tasks in group order, members in placement order. */
std::vector<std::size_t> group_order(const std::vector<std::size_t> &group_of)
{
	std::vector<std::size_t> order;
	std::size_t groups = 0;
	for (std::size_t g : group_of)
		groups = g + 1 > groups ? g + 1 : groups;
	for (std::size_t g = 0; g < groups; g++)
		for (std::size_t t = 0; t < group_of.size(); t++)
			if (group_of[t] == g)
				order.push_back(t);
	return order;
}

std::vector<Task> random_tasks(std::mt19937 &random, int count, int handles)
{
	std::vector<Task> tasks(count);
	for (Task &task : tasks) {
		int n = 1 + static_cast<int>(random() % 3);
		for (int i = 0; i < n; i++)
			task.accesses.push_back({static_cast<int>(random() % handles), random() % 3 == 0});
	}
	return tasks;
}

std::vector<std::size_t> sequential(std::size_t n)
{
	std::vector<std::size_t> order(n);
	for (std::size_t i = 0; i < n; i++)
		order[i] = i;
	return order;
}

/* The oracle has teeth: joining a group before the first allowed one
 * (what the rule forbids) is caught on the first sequence where it
 * matters. */
void window_order_oracle_catches_a_forbidden_placement(void **)
{
	std::vector<Task> tasks = {{writes({1})}, {writes({2})}, {reads({1, 2})}};
	/* C placed with A, in group 0: it runs before B. */
	std::vector<std::size_t> forbidden = {0, 1, 0};
	assert_false(execute(tasks, group_order(forbidden)) == execute(tasks, sequential(tasks.size())));
	std::vector<std::size_t> allowed = {0, 1, 1};
	assert_true(execute(tasks, group_order(allowed)) == execute(tasks, sequential(tasks.size())));
}

/* Random sequences, every placement chosen at random among those the rule
 * allows (a new group, or any allowed open group): the result is always the
 * one-by-one result. */
void window_order_random_groupings_keep_results(void **)
{
	std::mt19937 random(12345);
	long groupings = 0, merged_somewhere = 0;
	for (int sequence = 0; sequence < 3000; sequence++) {
		std::vector<Task> tasks = random_tasks(random, 2 + static_cast<int>(random() % 14), 1 + static_cast<int>(random() % 5));
		WindowOrder<int> order;
		std::vector<std::size_t> group_of;
		for (const Task &task : tasks) {
			std::size_t first = order.first_allowed_group(task.accesses);
			std::size_t choices = order.groups_opened() - first + 1; /* allowed groups, or a new one */
			std::size_t pick = first + random() % choices;
			if (pick == order.groups_opened()) {
				group_of.push_back(order.open(task.accesses));
			} else {
				assert_true(order.join(pick, task.accesses));
				group_of.push_back(pick);
				merged_somewhere++;
			}
		}
		assert_true(execute(tasks, group_order(group_of)) == execute(tasks, sequential(tasks.size())));
		groupings++;
	}
	assert_int_equal(groupings, 3000);
	assert_true(merged_somewhere > 3000); /* the sequences did exercise joining */
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(window_order_reader_may_join_its_writer_or_later),
		cmocka_unit_test(window_order_shared_reads_do_not_conflict),
		cmocka_unit_test(window_order_write_after_write_keeps_order),
		cmocka_unit_test(window_order_unrelated_tasks_may_join_any_group),
		cmocka_unit_test(window_order_oracle_catches_a_forbidden_placement),
		cmocka_unit_test(window_order_random_groupings_keep_results),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
