//! NHC's hardware checks read from /proc and /sys: `check_hw_cpuinfo`, the memory sizes
//! (`check_hw_physmem`, `_swap`, `_mem`) and minima free (`*_free`), `check_hw_eth` and
//! `check_hw_ib`. Numbers are compared as NHC's bash compares them (`[[ A -lt B ]]`).

use super::{Ctx, LineError, Verdict, cpu_counts};
use crate::nhc::bytes::show;
use crate::nhc::posix::glob_match;
use crate::nhc::size::{Held, lt, number, parse_size};

fn arg(args: &[Vec<u8>], i: usize) -> &[u8] {
    args.get(i).map_or(&b""[..], Vec::as_slice)
}

/// `check_hw_cpuinfo [SOCKETS] [CORES] [THREADS]`: each count given equals the machine's.
pub fn cpuinfo(args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let (sockets, cores, threads) = cpu_counts(&cx.m.cpuinfo());
    for (i, (what, actual)) in [("socket", sockets), ("core", cores), ("thread", threads)]
        .into_iter()
        .enumerate()
    {
        let want = arg(args, i);
        if want.is_empty() {
            continue;
        }
        // `[[ WANT -ne ACTUAL ]]`: no number, no failure.
        if number(want, cx.settings).is_ok_and(|w| w != actual as i64) {
            return Ok(Verdict::fail(
                None,
                format!(
                    "check_hw_cpuinfo:  Actual CPU {what} count ({actual}) does not match \
                     expected ({}).",
                    show(want)
                ),
            ));
        }
    }
    Ok(Verdict::pass(None))
}

/// `check_hw_physmem|swap|mem MIN MAX [FUDGE]`: the size in kB, widened by FUDGE (kB or a
/// share), within MIN and MAX. An empty MAX is 0, so NHC fails every run without one, and so
/// does this.
pub fn mem(check: &str, args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let mem = cx.m.meminfo();
    let get = |k: &str| mem.get(k).copied().unwrap_or(0) as i64;
    let (total, what) = match check {
        "check_hw_physmem" => (get("MemTotal"), "RAM size"),
        "check_hw_swap" => (get("SwapTotal"), "SWAP size"),
        _ => (
            get("MemTotal").wrapping_add(get("SwapTotal")),
            "system memory",
        ),
    };
    let empty = || Held {
        text: Vec::new(),
        value: Ok(0),
    };
    let min = parse_size(arg(args, 0), cx.settings)?.unwrap_or_else(empty);
    let max = parse_size(arg(args, 1), cx.settings)?.unwrap_or_else(empty);
    let fudge_text = arg(args, 2);
    let fudge: i64 = if let Some(pct) = fudge_text.strip_suffix(b"%") {
        // `$((FUDGE*TOTAL/100))` inside NHC's function: an error there ends its run.
        let p = number(pct, cx.settings).map_err(|e| {
            LineError::Abandons(format!("{}: {e} (in NHC's fudge factor)", show(pct)))
        })?;
        p.wrapping_mul(total).checked_div(100).unwrap_or(0)
    } else {
        match parse_size(fudge_text, cx.settings)? {
            None => 0,
            // A fudge that is no number makes NHC's `$((TOTAL+FUDGE))` fail: its run ends.
            Some(h) => {
                let shown = h.shown();
                h.value.map_err(|e| {
                    LineError::Abandons(format!("{shown}: {e} (in NHC's fudge factor)"))
                })?
            }
        }
    };
    let message = if lt(&Ok(total.wrapping_add(fudge)), &min.value) {
        Some(format!(
            "{check}:  Actual {what} ({total} kB) less than minimum allowed ({} kB).",
            min.shown()
        ))
    } else if lt(&max.value, &Ok(total.wrapping_sub(fudge))) {
        Some(format!(
            "{check}:  Actual {what} ({total} kB) greater than maximum allowed ({} kB).",
            max.shown()
        ))
    } else {
        None
    };
    Ok(Verdict::judged(None, message))
}

/// `check_hw_physmem_free|swap_free|mem_free MIN`: free RAM (MemFree + Buffers + Cached, as
/// NHC counts it), swap, or both, at least MIN kB.
pub fn mem_free(check: &str, args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let mem = cx.m.meminfo();
    let get = |k: &str| mem.get(k).copied().unwrap_or(0) as i64;
    let ram = get("MemFree")
        .wrapping_add(get("Buffers"))
        .wrapping_add(get("Cached"));
    let (free, what) = match check {
        "check_hw_physmem_free" => (ram, "RAM free"),
        "check_hw_swap_free" => (get("SwapFree"), "swap free"),
        _ => (ram.wrapping_add(get("SwapFree")), "free memory"),
    };
    let min = parse_size(arg(args, 0), cx.settings)?.unwrap_or(Held {
        text: Vec::new(),
        value: Ok(0),
    });
    Ok(Verdict::judged(
        None,
        lt(&Ok(free), &min.value).then(|| {
            format!(
                "{check}:  Not enough {what} ({free} kB < {} kB).",
                min.shown()
            )
        }),
    ))
}

/// `check_hw_eth DEV`: a network device whose name matches the pattern DEV.
pub fn eth(args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let dev = arg(args, 0);
    let found = cx.m.net_devices().iter().any(|d| glob_match(dev, d));
    Ok(Verdict::judged(
        Some(dev.to_vec()),
        (!found).then(|| format!("check_hw_eth:  Ethernet device {} not detected.", show(dev))),
    ))
}

/// `check_hw_ib [RATE] [DEV]`: some port ACTIVE and LinkUp, at RATE (Gb/s, as the port's `rate`
/// says it) and on DEV (`<hca>:<port>`) where given. Without the user-space MAD ABI (no
/// InfiniBand stack at all) NHC fails with its version message, and so does this.
pub fn ib(args: &[Vec<u8>], cx: &Ctx) -> Result<Verdict, LineError> {
    let check = "check_hw_ib";
    let rate = Some(arg(args, 0)).filter(|a| !a.is_empty());
    let dev = Some(arg(args, 1)).filter(|a| !a.is_empty());
    let (abi, ports) = cx.m.infiniband();
    let subject = dev.map(<[u8]>::to_vec);
    if abi == 0 {
        return Ok(Verdict::fail(
            subject,
            format!(
                "{check}:  Version mismatch between kernel OFED drivers and userspace OFED libraries."
            ),
        ));
    }
    let up = ports.iter().any(|p| {
        p.state == b"ACTIVE"
            && p.phys_state == b"LinkUp"
            && rate.is_none_or(|r| p.rate == r)
            && dev.is_none_or(|d| p.dev == d)
    });
    let on = dev.map_or(String::new(), |d| format!(" {}", show(d)));
    let at = rate.map_or(String::new(), |r| format!(" {} Gb/sec", show(r)));
    Ok(Verdict::judged(
        subject,
        (!up).then(|| format!("{check}:  No IB port{on} is ACTIVE (LinkUp{at}).")),
    ))
}
