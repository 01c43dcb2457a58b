//! Settings of the probe process itself, made once at its start, before any work.
//!
//! Depends on nothing in probe; on Linux, on `nix` for `prctl`.

/// Turns transparent huge pages off for this process, where the system allows that.
///
/// mimalloc asks the kernel for huge pages (`madvise(MADV_HUGEPAGE)`), and the kernel then
/// zeroes 2 MB for every first touch of a region, and again after mimalloc gives a region
/// back and takes it anew. probe allocates and frees in bursts (a batch of answers, a
/// recorder batch), so regions cycle. On the virtual machines probe runs on (a CI runner, a
/// cloud VM), a huge page the guest has not touched before costs the host far more than
/// 512 small ones, and a `probe run` against a fast API spent much of its CPU in the kernel
/// zeroing them (docs/benchmarks.md, "huge pages off"). probe's working set is tens of
/// megabytes, where huge pages save little in address translation.
///
/// The setting is the process's (`prctl(PR_SET_THP_DISABLE)`, Linux 3.15 and later) and
/// is inherited by children. Elsewhere, or when the kernel refuses, nothing changes: it is
/// a matter of speed, never of correctness, so a refusal is not an error.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        let _ = nix::sys::prctl::set_thp_disable(true);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn transparent_huge_pages_are_off_afterwards() {
        super::disable_transparent_huge_pages();
        assert_eq!(nix::sys::prctl::get_thp_disable().ok(), Some(true));
    }
}
