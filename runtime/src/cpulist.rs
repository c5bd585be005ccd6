//! Linux CPU list strings such as `"0-3,5,7-8"`.
//!
//! The kernel uses this format in sysfs (`devices/system/cpu/online`,
//! `devices/cpu_core/cpus`, ...) and `taskset -c` accepts it, so the
//! `--cpus LIST` flag and the layout file speak it too.

use std::ops::RangeInclusive;

use crate::excerpt::excerpt;

/// Largest CPU id accepted. Linux's `NR_CPUS` tops out at 8192; the guard
/// stops a typo like `0-4000000000` from expanding into billions of ids.
const MAX_CPU_ID: usize = 65_535;

/// Parses a CPU list such as `"0-3,5"` into CPU ids, in the order written.
///
/// Surrounding whitespace is ignored (sysfs files end in a newline) and an
/// empty string is an empty list, as the kernel writes it. Garbage, empty
/// entries, descending ranges (`"5-3"`) and repeated CPUs are rejected with a
/// message naming the offending entry, so a bad `--cpus` flag is easy to fix (a long
/// entry is quoted shortened).
///
/// # Examples
///
/// ```
/// use taopipe_runtime::parse_cpu_list;
///
/// assert_eq!(parse_cpu_list("0-3,5\n"), Ok(vec![0, 1, 2, 3, 5]));
/// assert_eq!(parse_cpu_list(""), Ok(vec![]));
/// assert!(parse_cpu_list("0-x").unwrap_err().contains("0-x"));
/// ```
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    // One bit per possible id (8 KiB) to find repeats: `0-65535` is 65 536 ids, which a
    // hash set hashed one by one (the fuzzer spent most of its time there).
    let mut seen = vec![0u64; (MAX_CPU_ID + 1).div_ceil(64)];
    let mut cpus = Vec::new();
    for token in s.split(',').map(str::trim) {
        if token.is_empty() {
            return Err(format!("empty entry in `{}`", excerpt(s)));
        }
        for cpu in parse_cpu_token(token)? {
            let (word, bit) = (cpu / 64, 1u64 << (cpu % 64));
            if seen[word] & bit != 0 {
                return Err(format!("cpu {cpu} listed twice (in `{}`)", excerpt(token)));
            }
            seen[word] |= bit;
            cpus.push(cpu);
        }
    }
    Ok(cpus)
}

/// Formats CPU ids as a CPU list, compressing runs of consecutive ids:
/// `[0, 1, 2, 5]` becomes `"0-2,5"`.
///
/// The order is kept (no sorting), so `parse_cpu_list(&format_cpu_list(v))`
/// gives back `v` for any list without repeats; topologies whose worker order
/// comes from a layout file display faithfully.
///
/// # Examples
///
/// ```
/// use taopipe_runtime::format_cpu_list;
///
/// assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
/// ```
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = cpus;
    while let Some(&first) = rest.first() {
        let run = run_length(rest);
        let last = rest[run - 1];
        parts.push(if run == 1 {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
        rest = &rest[run..];
    }
    parts.join(",")
}

/// Length of the run of consecutive ascending ids at the start of `cpus`.
fn run_length(cpus: &[usize]) -> usize {
    1 + cpus
        .windows(2)
        .take_while(|pair| pair[0].checked_add(1) == Some(pair[1]))
        .count()
}

/// Parses one entry of a CPU list: a single id (`"5"`) or an inclusive range
/// (`"0-3"`). Shared with the layout-file parser, which reports its own
/// file and line around the message.
pub(crate) fn parse_cpu_token(token: &str) -> Result<RangeInclusive<usize>, String> {
    let (low, high) = match token.split_once('-') {
        Some((low, high)) => (parse_cpu_id(low, token)?, parse_cpu_id(high, token)?),
        None => {
            let cpu = parse_cpu_id(token, token)?;
            (cpu, cpu)
        }
    };
    if low > high {
        return Err(format!("`{}` is a descending range", excerpt(token)));
    }
    Ok(low..=high)
}

/// Parses a bare CPU id; `token` is the whole entry, for the message.
fn parse_cpu_id(digits: &str, token: &str) -> Result<usize, String> {
    let cpu = parse_decimal(digits)
        .ok_or_else(|| format!("`{}` is not a CPU id or range", excerpt(token)))?;
    if cpu > MAX_CPU_ID {
        return Err(format!(
            "`{}`: cpu {cpu} is above the limit of {MAX_CPU_ID}",
            excerpt(token)
        ));
    }
    Ok(cpu)
}

/// Parses a plain decimal number: ASCII digits only, no sign or spaces
/// (`str::parse` would accept `"+3"`). `None` for anything else or overflow.
pub(crate) fn parse_decimal(s: &str) -> Option<usize> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulist_parses_singles_ranges_and_whitespace() {
        assert_eq!(
            parse_cpu_list(" 0-3,5 , 7-8\n"),
            Ok(vec![0, 1, 2, 3, 5, 7, 8])
        );
        assert_eq!(parse_cpu_list("4"), Ok(vec![4]));
        assert_eq!(parse_cpu_list("2-2"), Ok(vec![2]));
        assert_eq!(parse_cpu_list("  \n"), Ok(vec![]));
    }

    #[test]
    fn cpulist_keeps_written_order() {
        assert_eq!(parse_cpu_list("6-7,0-1"), Ok(vec![6, 7, 0, 1]));
    }

    #[test]
    fn cpulist_errors_name_the_bad_token() {
        for (input, token) in [
            ("0-3,x", "x"),
            ("0-3,5-3", "5-3"),
            ("1,,2", "1,,2"),
            ("0-", "0-"),
            ("-1", "-1"),
            ("+3", "+3"),
            ("0-4000000000", "0-4000000000"),
            ("1-2-3", "1-2-3"),
            ("0-3,2", "2"),
        ] {
            let err = parse_cpu_list(input).expect_err(input);
            assert!(err.contains(token), "{input:?}: {err}");
        }
    }

    #[test]
    fn cpulist_errors_quote_long_entries_shortened() {
        let long = "7".repeat(1_000_000);
        for input in [
            long.clone(),
            format!("0-{long}"),
            format!("{long}-x"),
            format!("1,,{long}"),
        ] {
            let err = parse_cpu_list(&input).expect_err("bad list");
            assert!(err.len() < 200, "{} bytes: {err:.200}", err.len());
            assert!(err.contains("bytes in all"), "{err}");
        }
    }

    #[test]
    fn cpulist_huge_ids_and_ranges_are_errors_not_panics() {
        for input in [
            "0-18446744073709551615",
            "18446744073709551615",
            "0-18446744073709551616",
            "18446744073709551615-0",
            "0-65536",
        ] {
            let err = parse_cpu_list(input).expect_err(input);
            assert!(err.contains(input), "{input:?}: {err}");
        }
        // The largest range allowed expands, once.
        assert_eq!(parse_cpu_list("0-65535").map(|v| v.len()), Ok(65_536));
        assert!(parse_cpu_list("0-65535,0-65535").is_err());
    }

    #[test]
    fn cpulist_format_compresses_runs() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(format_cpu_list(&[3]), "3");
        assert_eq!(format_cpu_list(&[0, 1]), "0-1");
        assert_eq!(format_cpu_list(&[5, 4, 3]), "5,4,3");
        assert_eq!(
            format_cpu_list(&[usize::MAX - 1, usize::MAX]),
            format!("{}-{}", usize::MAX - 1, usize::MAX)
        );
    }

    #[test]
    fn cpulist_round_trips() {
        for cpus in [
            vec![],
            vec![0],
            vec![0, 1, 2, 3],
            vec![1, 3, 5],
            vec![7, 8, 0, 1, 2, 10],
            vec![9, 8],
        ] {
            assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)), Ok(cpus.clone()));
        }
    }
}
