/* Ensures the order rule of submission-time fusion (submission/window_order.h)
 * keeps every conflicting pair of tasks in submission order: crafted
 * sequences (W/R/RW across groups, shared reads, one handle twice in a
 * task), and random sequences grouped every allowed way, executed group by
 * group and compared with one-by-one execution by an oracle that is first
 * shown to catch a placement the rule forbids; the same with handles of a
 * partition tree (overlapping data) and partition calls placed between
 * groups. */
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

/* ------------------------------------------------------------ partition trees */

/* A tree of handles over cells: 0 covers cells 0-3, its children 1 (0-1) and
 * 2 (2-3); 1's children 3 (cell 0) and 4 (cell 1).  Handles 5 and 6 are
 * unrelated (cells 4 and 5). */
bool tree_parent_of(const void *, const int &handle, int &parent)
{
	static const int parents[] = {-1, 0, 0, 1, 1, -1, -1};
	if (handle < 0 || handle > 6 || parents[handle] < 0)
		return false;
	parent = parents[handle];
	return true;
}

std::vector<int> cells_of(int handle)
{
	switch (handle) {
	case 0: return {0, 1, 2, 3};
	case 1: return {0, 1};
	case 2: return {2, 3};
	case 3: return {0};
	case 4: return {1};
	default: return {handle - 1};
	}
}

void window_order_child_conflicts_with_ancestors_not_siblings(void **)
{
	WindowOrder<int> order;
	order.set_parent_of(tree_parent_of, nullptr);
	order.open(writes({3})); /* group 0 writes a grandchild */
	order.open(writes({2})); /* group 1 writes the other child */
	/* Its sibling 4 is free; its parent 1 and the root overlap it. */
	assert_int_equal(order.first_allowed_group(writes({4})), 0);
	assert_int_equal(order.first_allowed_group(reads({1})), 0);
	assert_int_equal(order.first_allowed_group(reads({0})), 1);
	assert_true(order.join(0, reads({1})));
	/* A write to the root follows every access below it. */
	assert_int_equal(order.first_allowed_group(writes({0})), 1);
	assert_false(order.join(0, writes({0})));
	/* A read of the grandchild follows the root's writer... */
	assert_true(order.join(1, writes({0})));
	assert_int_equal(order.first_allowed_group(reads({3})), 1);
	/* ...an unrelated handle does not. */
	assert_int_equal(order.first_allowed_group(writes({5})), 0);
}

void window_order_calls_run_between_groups(void **)
{
	WindowOrder<int> order;
	order.set_parent_of(tree_parent_of, nullptr);
	order.open(writes({5}));              /* group 0: unrelated */
	Accesses partition = {{1, true}, {3, true}, {4, true}};
	assert_int_equal(order.call_position(partition), 0); /* nothing it conflicts with */
	assert_true(order.place_call(0, partition));
	/* A task on a child follows the call: group 0 runs after it. */
	assert_int_equal(order.first_allowed_group(writes({3})), 0);
	assert_true(order.join(0, writes({3})));
	/* The unpartition follows that task: after group 0. */
	Accesses unpartition = {{1, true}, {3, false}, {4, false}};
	assert_int_equal(order.call_position(unpartition), 1);
	assert_false(order.place_call(0, unpartition));
	assert_true(order.place_call(1, unpartition)); /* before the next group */
	/* A call after it goes there too, after it, not after a group. */
	assert_int_equal(order.call_position(writes({0})), 1);
	/* A reader of the parent must wait for the unpartition: group 1. */
	assert_int_equal(order.first_allowed_group(reads({1})), 1);
	/* The unrelated handle is still free. */
	assert_int_equal(order.first_allowed_group(writes({5})), 0);
}

struct Item {
	Accesses accesses;
	bool call;
};

/* What each item saw of each cell it touches (versions, as execute()),
 * executing items in the given order. */
std::vector<std::map<int, int>> execute_cells(const std::vector<Item> &items, const std::vector<std::size_t> &order)
{
	std::vector<std::map<int, int>> seen(items.size());
	std::map<int, int> version;
	for (std::size_t t : order) {
		for (const Access<int> &access : items[t].accesses)
			if (!access.writes)
				for (int cell : cells_of(access.handle))
					seen[t][cell] = version[cell];
		for (const Access<int> &access : items[t].accesses)
			if (access.writes)
				for (int cell : cells_of(access.handle)) {
					seen[t][-1 - cell] = version[cell];
					version[cell]++;
				}
	}
	return seen;
}

/* Position p: the calls placed at p in placement order, then group p's
 * tasks in placement order. */
std::vector<std::size_t> position_order(const std::vector<Item> &items, const std::vector<std::size_t> &position_of)
{
	std::vector<std::size_t> order;
	std::size_t positions = 0;
	for (std::size_t p : position_of)
		positions = p + 1 > positions ? p + 1 : positions;
	for (std::size_t p = 0; p < positions; p++)
		for (int calls = 1; calls >= 0; calls--)
			for (std::size_t t = 0; t < items.size(); t++)
				if (position_of[t] == p && items[t].call == (calls == 1))
					order.push_back(t);
	return order;
}

void window_order_random_trees_and_calls_keep_results(void **)
{
	std::mt19937 random(4242);
	long calls_placed_early = 0, tasks_joined = 0;
	for (int sequence = 0; sequence < 3000; sequence++) {
		std::vector<Item> items(2 + random() % 16);
		for (Item &item : items) {
			item.call = random() % 4 == 0;
			int n = 1 + static_cast<int>(random() % 3);
			for (int i = 0; i < n; i++)
				item.accesses.push_back({static_cast<int>(random() % 7), random() % 3 == 0});
		}
		WindowOrder<int> order;
		order.set_parent_of(tree_parent_of, nullptr);
		std::vector<std::size_t> position_of;
		for (const Item &item : items) {
			if (item.call) {
				std::size_t first = order.call_position(item.accesses);
				std::size_t pick = first + random() % (order.groups_opened() - first + 1);
				assert_true(order.place_call(pick, item.accesses));
				if (pick < order.groups_opened())
					calls_placed_early++;
				position_of.push_back(pick);
				continue;
			}
			std::size_t first = order.first_allowed_group(item.accesses);
			std::size_t pick = first + random() % (order.groups_opened() - first + 1);
			if (pick == order.groups_opened()) {
				position_of.push_back(order.open(item.accesses));
			} else {
				assert_true(order.join(pick, item.accesses));
				position_of.push_back(pick);
				tasks_joined++;
			}
		}
		std::vector<std::size_t> one_by_one(items.size());
		for (std::size_t i = 0; i < items.size(); i++)
			one_by_one[i] = i;
		assert_true(execute_cells(items, position_order(items, position_of)) == execute_cells(items, one_by_one));
	}
	assert_true(calls_placed_early > 300);
	assert_true(tasks_joined > 3000);
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
		cmocka_unit_test(window_order_child_conflicts_with_ancestors_not_siblings),
		cmocka_unit_test(window_order_calls_run_between_groups),
		cmocka_unit_test(window_order_random_trees_and_calls_keep_results),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
