//! fio's `buffer_pattern`: a byte pattern repeated over a buffer from its start, laid as a few
//! doubling copies rather than one copy per period.

/// fio's buffer_pattern: the pattern repeated from the start of the buffer (nothing when empty).
pub fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    let len = buf.len();
    fill_pattern_range(buf, pattern, 0, len);
}

/// The bytes `start..end` of a buffer as `fill_pattern` lays them: one period of the pattern at its
/// phase there, then copies of the filled part doubling in length (a few large copies, not one
/// per period: a 4-byte pattern over 1 MiB was 262,144 copies).
pub fn fill_pattern_range(buf: &mut [u8], pattern: &[u8], start: usize, end: usize) {
    let n = pattern.len();
    if n == 0 || start >= end {
        return;
    }
    let r = &mut buf[start..end];
    let first = n.min(r.len());
    for (i, b) in r[..first].iter_mut().enumerate() {
        *b = pattern[(start + i) % n];
    }
    // The filled part is a whole number of periods until the last copy, so each copy keeps the phase.
    let mut filled = first;
    while filled < r.len() {
        let k = filled.min(r.len() - filled);
        r.copy_within(..k, filled);
        filled += k;
    }
}

#[cfg(test)]
mod tests {
    use super::{fill_pattern, fill_pattern_range};

    fn naive(len: usize, pattern: &[u8]) -> Vec<u8> {
        (0..len).map(|i| pattern[i % pattern.len()]).collect()
    }

    #[test]
    fn a_pattern_lies_from_the_buffers_start_whatever_the_range() {
        for pattern in [&b"\xde\xad\xbe\xef"[..], b"abc", b"z", b"0123456789abcdefg"] {
            let want = naive(5000, pattern);
            let mut whole = vec![0u8; 5000];
            fill_pattern(&mut whole, pattern);
            assert_eq!(whole, want);
            for (start, end) in [(0, 1), (1, 2), (3, 4096), (7, 5000), (4095, 4100), (2, 2)] {
                let mut buf = vec![0u8; 5000];
                fill_pattern_range(&mut buf, pattern, start, end);
                assert_eq!(&buf[start..end], &want[start..end], "{pattern:?} {start}..{end}");
                assert!(buf[..start].iter().chain(&buf[end..]).all(|&b| b == 0), "only the range is written");
            }
        }
    }

    #[test]
    fn no_pattern_writes_nothing() {
        let mut buf = vec![7u8; 64];
        fill_pattern(&mut buf, &[]);
        assert!(buf.iter().all(|&b| b == 7));
    }
}
