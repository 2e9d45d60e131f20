/* Sets and maps keyed by StarPU handles (or any pointer), with open
 * addressing: no allocation per element, and clear() keeps the table.
 *
 * The window keeps such sets for every group it holds (the partition-tree
 * handles a group holds and their ancestors) and rebuilds them when a
 * partition plan is elided; with std::unordered_set each insertion was a
 * heap allocation, and in DAHL's main thread, the one that bounds its
 * epochs, malloc and free took a quarter of the instructions (callgrind,
 * 2 epochs at 28x28).
 *
 * Not thread-safe: the owner's lock guards it. */
#ifndef STARPU_FUSING_CORE_HANDLE_TABLE_H
#define STARPU_FUSING_CORE_HANDLE_TABLE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace fusing {

/* Key: a non-null pointer.  Value: a default-constructible type (an empty
 * struct for a set). */
template <typename Key, typename Value>
class HandleTable {
public:
	/* The value of key, inserted default-constructed when absent;
	 * inserted tells which. */
	Value &find_or_add(Key key, bool *inserted = nullptr)
	{
		if (2 * (size_ + 1) > slots_.size())
			grow();
		Slot &slot = slots_[index_for(key)];
		if (inserted)
			*inserted = slot.key == nullptr;
		if (slot.key == nullptr) {
			slot.key = key;
			slot.value = Value{};
			size_++;
		}
		return slot.value;
	}

	/* The value of key, or null. */
	const Value *find(Key key) const
	{
		if (size_ == 0)
			return nullptr;
		const Slot &slot = slots_[index_for(key)];
		return slot.key ? &slot.value : nullptr;
	}
	Value *find(Key key) { return const_cast<Value *>(static_cast<const HandleTable *>(this)->find(key)); }

	bool contains(Key key) const { return find(key) != nullptr; }

	/* Removes key; whether it was there.  Linear probing's deletion: the
	 * elements after it in its run move back into the hole when their
	 * home slot allows, so no tombstone is left. */
	bool erase(Key key)
	{
		if (size_ == 0)
			return false;
		const std::size_t mask = slots_.size() - 1;
		std::size_t hole = index_for(key);
		if (slots_[hole].key == nullptr)
			return false;
		for (std::size_t next = (hole + 1) & mask; slots_[next].key != nullptr; next = (next + 1) & mask) {
			const std::size_t home = home_of(slots_[next].key);
			/* next may move to hole if its home is not within
			 * (hole, next], cyclically. */
			const bool home_between = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
			if (!home_between) {
				slots_[hole] = std::move(slots_[next]);
				hole = next;
			}
		}
		slots_[hole].key = nullptr;
		slots_[hole].value = Value{};
		size_--;
		return true;
	}
	bool empty() const { return size_ == 0; }
	std::size_t size() const { return size_; }

	void clear()
	{
		for (Slot &slot : slots_)
			slot.key = nullptr;
		size_ = 0;
	}

	/* f(key, value) for every element, in no particular order. */
	template <typename F>
	void for_each(F f) const
	{
		for (const Slot &slot : slots_)
			if (slot.key)
				f(slot.key, slot.value);
	}

private:
	struct Slot {
		Key key = nullptr;
		Value value{};
	};

	/* The slot holding key, or the empty one it would go to.  The table
	 * is never full (at most half used). */
	std::size_t index_for(Key key) const
	{
		const std::size_t mask = slots_.size() - 1;
		std::size_t slot = home_of(key);
		while (slots_[slot].key != nullptr && slots_[slot].key != key)
			slot = (slot + 1) & mask;
		return slot;
	}

	/* Where key's probe starts.  Handles are heap addresses: the low bits
	 * say little. */
	std::size_t home_of(Key key) const
	{
		return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull) & (slots_.size() - 1);
	}

	void grow()
	{
		std::vector<Slot> old(std::max<std::size_t>(16, 2 * slots_.size()));
		old.swap(slots_);
		size_ = 0;
		for (Slot &slot : old)
			if (slot.key)
				find_or_add(slot.key) = std::move(slot.value);
	}

	std::vector<Slot> slots_; /* size a power of two, or 0 */
	std::size_t size_ = 0;
};

struct NoValue {};

/* A set of handles. */
template <typename Key>
class HandleSet {
public:
	/* Whether key was absent (and is now in). */
	bool insert(Key key)
	{
		bool inserted = false;
		table_.find_or_add(key, &inserted);
		return inserted;
	}
	bool contains(Key key) const { return table_.contains(key); }
	/* Whether key was there (and is now out). */
	bool erase(Key key) { return table_.erase(key); }
	bool empty() const { return table_.empty(); }
	std::size_t size() const { return table_.size(); }
	void clear() { table_.clear(); }
	template <typename F>
	void for_each(F f) const
	{
		table_.for_each([&](Key key, const NoValue &) { f(key); });
	}

private:
	HandleTable<Key, NoValue> table_;
};

} // namespace fusing

#endif
