//! benchpress turns `-i '{"clients": ...}'` into argv by `str.format` and a whitespace split
//! (`docs/benchpress.md`). Every row of that table must give the intended host list, with the
//! names kept literally (shell metacharacters are never interpreted).

use crate::util::{assert_valid, run};

/// (argv after `-r server`, the host list health_check must record)
const TABLE: &[(&[&str], &[&str])] = &[
    (&["-c", "127.0.0.1"], &["127.0.0.1"]),
    (&["-c", "a,b"], &["a", "b"]),
    (&["-c"], &[]),
    (&["-c", "a,", "b"], &["a", "b"]),
    (&["-c", "a", "b"], &["a", "b"]),
    (&["-c", "tab", "here"], &["tab", "here"]),
    (&["-c", "5"], &["5"]),
    (&["-c", "['a',", "'b']"], &["['a'", "'b']"]),
    (&["-c", "{x}"], &["{x}"]),
    (&["-c", "x;rm", "-rf", "/"], &["x;rm", "-rf", "/"]),
    (&["-c", "$HOME"], &["$HOME"]),
    (&["-c", "a,,b,a"], &["a", "b"]),
    (&["--clients=h1", "h2"], &["h1", "h2"]),
    (&[], &[]),
];

#[test]
fn every_benchpress_argv_shape_gives_the_intended_hosts() {
    for (args, hosts) in TABLE {
        let mut argv = vec!["-r", "server"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--only", "system"]);
        let r = run(&argv);
        assert_eq!(r.code, 0, "{argv:?}: {}", r.stderr);
        let doc = r.json();
        assert_valid(&doc);
        assert_eq!(
            doc["health_check"]["clients"],
            serde_json::json!(hosts),
            "{argv:?}"
        );
    }
}

#[test]
fn options_after_the_client_list_still_count() {
    let r = run(&[
        "-r",
        "server",
        "-c",
        "a",
        "b",
        "--only",
        "system",
        "--profile",
        "quick",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["health_check"]["profile"], "quick");
    assert_eq!(
        doc["health_check"]["clients"],
        serde_json::json!(["a", "b"])
    );
}

#[test]
fn an_empty_client_list_skips_the_network_with_the_reason() {
    let r = run(&["-r", "server", "-c", "--only", "system,network"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let status = r.json()["health_check"]["sections"]["network"].clone();
    assert!(
        status.as_str().unwrap().starts_with("skipped: no clients"),
        "{status}"
    );
}
