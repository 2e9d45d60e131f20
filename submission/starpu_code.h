/* Telling StarPU's own calls from the program's.
 *
 * StarPU calls some of its exported functions itself, through its PLT, so
 * that the definitions this library puts in their place get those calls
 * too: at the end of a reduction, in the worker releasing the data and
 * holding the handle's lock, _starpu_data_end_reduction_mode calls
 * starpu_data_set_sequential_consistency_flag and
 * _starpu_data_end_reduction_mode_terminate calls
 * starpu_data_unregister_no_coherency (datawizard/reduction.c, 1.3 and
 * 1.4).  Such a call serves StarPU's handling of an access it already
 * has; flushing the window there is not needed (the window holds only
 * tasks submitted after that access reached StarPU: doc/design.md, section
 * 12) and deadlocks: DAHL's basic_cnn hung with the program's thread
 * flushing, waiting in StarPU for that handle's lock, and the worker
 * flushing, waiting for the window.  (StarPU 1.3 also submits its
 * reduction tasks through starpu_task_submit, from a tail call in
 * _starpu_task_submit_internally, so their return address is that of
 * StarPU's caller, and starpu_task_insert submits the program's tasks from
 * libstarpu too: submissions cannot be told apart by caller.  They follow
 * the conflict rule instead: window.h.)
 *
 * Reads a table filled once, on first use, and is lock-free afterwards;
 * any thread. */
#ifndef STARPU_FUSING_SUBMISSION_STARPU_CODE_H
#define STARPU_FUSING_SUBMISSION_STARPU_CODE_H

namespace fusing {

/* Whether return_address, the address a call returns to, lies in the code
 * of libstarpu: the call is StarPU's own.  For barriers: a barrier
 * libstarpu calls on the program's behalf (starpu_data_acquire calling
 * starpu_data_acquire_on_node) was entered by the program first, and
 * flushed then.  libstarpumpi is not StarPU's own code here: its
 * starpu_mpi_task_insert, which is no barrier, posts the program's sends
 * and receives through barriers (the MPI stencil read data before the
 * deferred tasks writing it when those calls did not flush). */
bool called_from_starpu(const void *return_address);

/* Whether return_address lies in this library's own code.  The library
 * never calls the acquisition and release functions it defines through
 * their symbols; StarPU does, forwarding one to another
 * (starpu_data_acquire_on_node_cb to ..._sequential_consistency,
 * starpu_data_release to starpu_data_release_to on 1.4) by a tail call, so that the
 * forwarded call returns into this library's definition of the first.
 * Such a call is StarPU's, entered from the program's or StarPU's. */
bool called_from_this_library(const void *return_address);

} // namespace fusing

#endif
