/* core/handle_table.h against std::unordered_map: random insertions,
 * look-ups and erasures (the erasure's backward shift must keep every
 * remaining key findable), clear, and growth. */
#include "cmocka.hpp"
#include "core/handle_table.h"

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

using Key = const int *;

/* Keys as heap handles are: distinct addresses 16 bytes apart, several
 * sharing the low bits the hash drops. */
std::vector<Key> keys(std::size_t count)
{
	static std::vector<int> storage(4 * 4096);
	std::vector<Key> all;
	for (std::size_t i = 0; i < count; i++)
		all.push_back(&storage[4 * i]);
	return all;
}

void check_same(const fusing::HandleTable<Key, long> &table, const std::unordered_map<Key, long> &reference, const std::vector<Key> &all)
{
	assert_int_equal(table.size(), reference.size());
	for (Key key : all) {
		const long *found = table.find(key);
		const auto expected = reference.find(key);
		if (expected == reference.end())
			assert_null(found);
		else {
			assert_non_null(found);
			assert_int_equal(*found, expected->second);
		}
	}
	std::size_t visited = 0;
	table.for_each([&](Key key, long value) {
		visited++;
		assert_int_equal(reference.at(key), value);
	});
	assert_int_equal(visited, reference.size());
}

void handle_table_matches_a_map_through_insertions_and_erasures(void **)
{
	const std::vector<Key> all = keys(600);
	std::mt19937 random(7);
	fusing::HandleTable<Key, long> table;
	std::unordered_map<Key, long> reference;
	for (int step = 0; step < 20000; step++) {
		Key key = all[random() % all.size()];
		switch (random() % 3) {
		case 0: {
			bool inserted = false;
			table.find_or_add(key, &inserted) += step;
			assert_int_equal(inserted, reference.count(key) == 0);
			reference[key] += step;
			break;
		}
		case 1:
			assert_int_equal(table.erase(key), reference.erase(key) == 1);
			break;
		default:
			assert_int_equal(table.contains(key), reference.count(key) == 1);
			break;
		}
		if (step % 1000 == 0)
			check_same(table, reference, all);
	}
	check_same(table, reference, all);
	table.clear();
	reference.clear();
	check_same(table, reference, all);
	/* Refilled after clear: the table kept its slots. */
	for (Key key : all)
		table.find_or_add(key) = 1;
	for (Key key : all)
		reference[key] = 1;
	check_same(table, reference, all);
}

void handle_set_inserts_once(void **)
{
	const std::vector<Key> all = keys(100);
	fusing::HandleSet<Key> set;
	for (Key key : all)
		assert_true(set.insert(key));
	for (Key key : all)
		assert_false(set.insert(key));
	assert_int_equal(set.size(), all.size());
	for (std::size_t i = 0; i < all.size(); i += 2)
		assert_true(set.erase(all[i]));
	for (std::size_t i = 0; i < all.size(); i++)
		assert_int_equal(set.contains(all[i]), i % 2 == 1);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(handle_table_matches_a_map_through_insertions_and_erasures),
		cmocka_unit_test(handle_set_inserts_once),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
