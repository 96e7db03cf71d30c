//! Property tests over the iperf3 control-message decoder: whatever bytes a peer sends, decoding
//! returns an error or a value, never panics; and what we encode decodes to the same value.

use health_check::net::iperf3::protocol::{
    MAX_PARAMS_JSON, Params, Results, decode_json, read_json, read_state, write_json,
};
use proptest::prelude::*;
use std::io::Cursor;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_json::<Params>(&bytes, "params");
        let _ = decode_json::<Results>(&bytes, "results");
        let _ = read_json::<_, Params>(&mut Cursor::new(&bytes), MAX_PARAMS_JSON, "params");
        let _ = read_state(&mut Cursor::new(&bytes), "state");
    }

    #[test]
    fn json_shaped_noise_never_panics(
        keys in proptest::collection::vec("[a-z_]{1,12}", 0..8),
        values in proptest::collection::vec(prop_oneof![
            Just("true".to_string()), Just("false".to_string()), Just("null".to_string()),
            any::<i64>().prop_map(|v| v.to_string()), any::<u64>().prop_map(|v| v.to_string()),
            any::<f64>().prop_map(|v| format!("{v:?}")), "\"[ -~]{0,10}\"".prop_map(|s| s),
            Just("[]".to_string()), Just("{}".to_string()),
        ], 0..8),
    ) {
        let body = format!(
            "{{{}}}",
            keys.iter().zip(&values).map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(",")
        );
        let _ = decode_json::<Params>(body.as_bytes(), "params");
        let _ = decode_json::<Results>(body.as_bytes(), "results");
    }

    #[test]
    fn parameters_round_trip(streams in 1u32..=128, seconds in 1u32..=86_400, reverse in any::<bool>()) {
        let p = Params::tcp_test(streams, seconds, reverse);
        let mut wire = Vec::new();
        write_json(&mut wire, &p).unwrap();
        let back: Params = read_json(&mut Cursor::new(&wire), MAX_PARAMS_JSON, "params").unwrap();
        prop_assert_eq!(back, p);
    }
}
