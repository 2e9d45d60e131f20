/* What StarPU-level test programs share: which policy a test file names,
 * and a watchdog that turns a hang into a failure naming the test.
 *
 * make check runs a test program once per file such as tests/fusion/lws.fusion
 * or tests/fusion/lws-when-busy.fusion: the name is the base policy, and
 * "-when-busy" keeps the default STARPU_FUSING_HOLD (fusion then depends on
 * timing, so tests check results only); otherwise STARPU_FUSING_HOLD=always
 * makes every fusable task wait for a batch.  Then "-ready" sets
 * STARPU_FUSING_MODE=ready (ready-time fusion alone), and a last "-poll"
 * STARPU_FUSING_IDLE_WORKERS=poll (idle workers keep StarPU's polling). */
#ifndef STARPU_FUSING_TESTS_POLICY_TEST_HPP
#define STARPU_FUSING_TESTS_POLICY_TEST_HPP

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

struct TestedPolicy {
	std::string base;
	bool hold_always;
	bool idle_workers_poll;
	bool ready_mode; /* STARPU_FUSING_MODE=ready */
};

/* Whether name ends with suffix, then removed. */
inline bool strip_suffix(std::string &name, const std::string &suffix)
{
	if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
		return false;
	name.resize(name.size() - suffix.size());
	return true;
}

/* path: .../BASE[-when-busy][-ready][-poll][.extension] */
inline TestedPolicy tested_policy_from_file(std::string path, const std::string &extension)
{
	path = path.substr(path.find_last_of('/') + 1);
	strip_suffix(path, extension);
	TestedPolicy tested{path, true, false, false};
	tested.idle_workers_poll = strip_suffix(tested.base, "-poll");
	tested.ready_mode = strip_suffix(tested.base, "-ready");
	tested.hold_always = !strip_suffix(tested.base, "-when-busy");
	return tested;
}

/* Sets the variables every StarPU-level test starts from: the test chooses
 * its policy itself (starpu_fusing_policy()), over tested.base. */
inline void configure_tested_policy(const TestedPolicy &tested)
{
	unsetenv("STARPU_SCHED");
	setenv("STARPU_FUSING_BASE", tested.base.c_str(), 1);
	if (tested.hold_always)
		setenv("STARPU_FUSING_HOLD", "always", 1);
	else
		unsetenv("STARPU_FUSING_HOLD");
	if (tested.idle_workers_poll)
		setenv("STARPU_FUSING_IDLE_WORKERS", "poll", 1);
	else
		unsetenv("STARPU_FUSING_IDLE_WORKERS");
	if (tested.ready_mode)
		setenv("STARPU_FUSING_MODE", "ready", 1);
}

/* The watchdog: watchdog_arm(name, seconds) before a test, watchdog_disarm()
 * after; a test still running then ends the process with a line naming it. */
namespace watchdog_detail {
inline const char *&running_test()
{
	static const char *name = "";
	return name;
}
inline void on_alarm(int)
{
	const char prefix[] = "timed out (deadlock?) in test ";
	(void)!write(2, prefix, sizeof(prefix) - 1);
	(void)!write(2, running_test(), std::strlen(running_test()));
	(void)!write(2, "\n", 1);
	_exit(1);
}
} // namespace watchdog_detail

inline void watchdog_arm(const char *test, unsigned seconds)
{
	watchdog_detail::running_test() = test;
	std::signal(SIGALRM, watchdog_detail::on_alarm);
	alarm(seconds);
}

inline void watchdog_disarm()
{
	alarm(0);
}

#endif
