//! A shaped 1 Gbit/s link between two namespaces, measured against Debian's iperf3 in both
//! directions. In a test binary of its own: cargo runs test binaries one after another, so no
//! other test competes for the two CPUs while the figure must be within 1 %.
#![allow(clippy::unwrap_used)]

#[path = "integration/netns.rs"]
#[allow(dead_code)]
mod netns;
#[path = "integration/util.rs"]
#[allow(dead_code)]
mod util;

use netns::{ADDR_B, NetPair, Side, require};
use serde_json::Value;
use util::{assert_valid, bin_path};

fn bin_str() -> String {
    bin_path().to_string_lossy().into_owned()
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON document ({e}); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// TCP goodput of a 1 Gbit/s token bucket at MTU 1500: tbf counts 1514-byte frames carrying 1448
/// payload bytes; the reference figure is 0.9554.
const TBF_1G_GOODPUT: f64 = 0.9554;

fn within_1pct(v: f64) -> bool {
    (v - TBF_1G_GOODPUT).abs() <= TBF_1G_GOODPUT * 0.01
}

#[test]
fn shaped_gigabit_link_measures_tcp_goodput_both_ways_against_stock_iperf3() {
    require("iperf3", "iperf3");
    let mut pair = NetPair::new();
    pair.shape(Side::A, "1gbit");
    pair.shape(Side::B, "1gbit");
    pair.spawn(Side::B, "iperf3", &["-s", "-p", "5201"]);
    pair.wait_listening(Side::B, 5201);
    let out = pair
        .command(Side::A, &bin_str())
        .args(["iperf", ADDR_B, "--iperf-time", "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    assert_valid(&doc);
    let b = &doc["iperf3 bandwidth"][0];
    assert_eq!(b["peer"], "iperf3");
    let fwd = b["bandwidth"].as_f64().unwrap();
    let rev = b["reverse_gbps"].as_f64().unwrap();
    assert!(
        within_1pct(fwd),
        "forward {fwd} Gbit/s is not within 1% of {TBF_1G_GOODPUT}"
    );
    assert!(
        within_1pct(rev),
        "reverse {rev} Gbit/s is not within 1% of {TBF_1G_GOODPUT}"
    );
    assert!(b["sender_gbps"].as_f64().unwrap() >= fwd * 0.99);
    // veth reports 10 Gbit/s; efficiency is judged against that link.
    assert_eq!(b["interface"], "hca");
    assert_eq!(b["link_speed_gbps"], 10.0);
    let eff = b["link_efficiency_pct"].as_f64().unwrap();
    assert!(
        (eff - 100.0 * fwd / (10.0 * 1448.0 / 1538.0)).abs() < 0.2,
        "{eff}"
    );
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "network.link_efficiency:10.0.0.2")
        .unwrap();
    assert_eq!(check["status"], "warn", "{check}");
}
