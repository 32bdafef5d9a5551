// Clang thread-safety annotations (after abseil's thread_annotations.h): which lock guards
// which field, and which functions must be called with a lock held. They expand to nothing
// on other compilers; the CI build under clang -Wthread-safety -Werror checks them.
#pragma once

#if defined(__clang__)
#define MEMARENA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MEMARENA_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a "capability"): Mutex, host::SpinLock.
#define MEMARENA_CAPABILITY(name) MEMARENA_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a lock for its lifetime: ScopedLock.
#define MEMARENA_SCOPED_CAPABILITY MEMARENA_THREAD_ANNOTATION(scoped_lockable)
// A field read or written only with `lock` held.
#define MEMARENA_GUARDED_BY(lock) MEMARENA_THREAD_ANNOTATION(guarded_by(lock))
// A pointer field whose pointee is read or written only with `lock` held.
#define MEMARENA_PT_GUARDED_BY(lock) MEMARENA_THREAD_ANNOTATION(pt_guarded_by(lock))
// A function the caller must call with these locks held (the old `Locked` suffix).
#define MEMARENA_REQUIRES(...) MEMARENA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function the caller must call without these locks (it takes them itself).
#define MEMARENA_EXCLUDES(...) MEMARENA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes / drops these locks (no argument: the object itself).
#define MEMARENA_ACQUIRE(...) MEMARENA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define MEMARENA_RELEASE(...) MEMARENA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define MEMARENA_TRY_ACQUIRE(...) MEMARENA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// Tells the analysis a lock is held where it cannot see it taken (checked at run time by
// nothing: use only where the caller's contract says so).
#define MEMARENA_ASSERT_CAPABILITY(x) MEMARENA_THREAD_ANNOTATION(assert_capability(x))
// Returns a reference to the lock that guards something (an accessor such as lock()).
#define MEMARENA_RETURN_CAPABILITY(x) MEMARENA_THREAD_ANNOTATION(lock_returned(x))
// Opts one function out of the analysis: fork handlers that take every lock in turn, and
// code whose locking the analysis cannot follow. Say why next to each use.
#define MEMARENA_NO_THREAD_SAFETY_ANALYSIS MEMARENA_THREAD_ANNOTATION(no_thread_safety_analysis)
