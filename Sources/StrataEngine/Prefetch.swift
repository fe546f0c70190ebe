import CPrefetch

/// Starts loading every cache line of `bytes` at once, before a search reads a few of them.
///
/// Why: a lookup in a tree larger than the CPU's caches misses at nearly every probe of a
/// node's binary search, and each probe's address depends on the comparison before it, so
/// the misses wait one after another (perf, W1 get at 1M: the leaf's search and the read of
/// its entry were three fifths of the time). Asked for together, the lines of a leaf's heads
/// and entry starts (a few hundred bytes) arrive in about the time of one miss, and the
/// probes then hit. Where the lines are cached already, each request costs an instruction.
///
/// Takes an address and a length the caller keeps beside the array (not the array itself):
/// reading them from the array loads its header, a miss of its own that the lookup then
/// waits for.
@inline(__always)
func prefetchLines(from base: UnsafeRawPointer?, count: Int) {
    guard let base, count > 0 else { return }
    var offset = 0
    while offset < count {
        strata_prefetch(base + offset)
        offset &+= 64
    }
    // The last line, when the bytes do not start on a line boundary.
    strata_prefetch(base + (count &- 1))
}
