// The host heap registers its fork handlers at load (heap.cc, RegisterForkHandlersAtLoad), so
// a process that starts threads before its first allocation never races the registration: a
// fork by one thread while a second holds a heap lock during a third's registration would
// leave that lock held in the child. Its own binary: nothing here touches the host heap
// (GoogleTest allocates through glibc), so only the load-time registration can pass.
#include <gtest/gtest.h>

#include "host/spin_lock.h"

namespace memarena::host {
namespace {

TEST(ForkHandlersAtLoad, AreRegisteredBeforeTheFirstHeapLock) {
  EXPECT_EQ(g_fork_handlers_state.load(std::memory_order_acquire), 2)
      << "the fork handlers are not registered in a process that has not used the heap yet: "
         "its first heap lock would register them while the program's threads run";
}

}  // namespace
}  // namespace memarena::host
