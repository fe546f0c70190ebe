#ifndef STRATA_PREFETCH_H
#define STRATA_PREFETCH_H

/// Asks the processor to start loading the cache line holding `address` for reading, and
/// to keep it in every cache level. A hint: it never faults, so any address will do.
///
/// Swift has no prefetch of its own, and clang's `_mm_prefetch` is a macro Swift cannot
/// import; a static inline function here compiles to the one instruction at each call.
static inline void strata_prefetch(const void *_Nullable address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
