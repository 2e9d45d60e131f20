/* When a ready task waits for a batch instead of running at once.
 *
 * The no-starvation rule (DESIGN.md §4): holding a task back is only free
 * while every worker of its context already has queued work.  When fewer
 * ready tasks are queued than there are workers, a worker is (or is about to
 * be) idle, so the task runs unfused and open batches are flushed.  This is
 * also what keeps a chain of dependent tasks free of any batching cost: each
 * link becomes ready when the queue is empty, so none is held. */
#ifndef STARPU_FUSING_FUSION_ADMISSION_H
#define STARPU_FUSING_FUSION_ADMISSION_H

namespace fusing {

/* queued_not_started: tasks pushed to the base policy of the context and not
 * started yet (proxies count as one).  nworkers: workers of the context. */
inline bool every_worker_has_queued_work(long queued_not_started, unsigned nworkers)
{
	return nworkers > 0 && queued_not_started >= static_cast<long>(nworkers);
}

} // namespace fusing

#endif
