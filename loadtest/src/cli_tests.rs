//! The flags and the file, resolved.

use super::*;

#[test]
fn flags_override_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bench.toml");
    std::fs::write(
        &cfg,
        "url = \"https://example.test:9443\"\nseed = 7\n[run]\nrate = 100\nduration = 3\n\
         [lookup]\nemail_share = 0.5\n[write]\nmix = { notes = 1 }\n[mixed]\nsync_rate = 0\n",
    )
    .unwrap();
    let common = Common {
        config: Some(cfg.clone()),
        key: Some("k".into()),
        ..Common::default()
    };
    let args = RunArgs {
        duration: Some(9.0),
        ..RunArgs::default()
    };
    let s = Settings::resolve(&common, Scenario::Lookup, &args).unwrap();
    assert_eq!(s.url, "https://example.test:9443");
    assert_eq!((s.rate, s.duration, s.seed), (Some(100.0), 9.0, 7));
    assert_eq!(s.lookup.email_share, 0.5);
    assert_eq!(s.write.mix["notes"], 1);
    assert_eq!(s.write.mix["tasks"], 0);
    assert_eq!(s.mixed.sync_rate, 0.0);
    // --concurrency selects the closed loop even when the file sets a rate.
    let args = RunArgs {
        concurrency: Some(4),
        ..RunArgs::default()
    };
    let s = Settings::resolve(&common, Scenario::Lookup, &args).unwrap();
    assert_eq!((s.rate, s.concurrency), (None, 4));
    std::fs::write(&cfg, "[run]\nrat = 1\n").unwrap();
    assert!(Settings::resolve(&common, Scenario::Lookup, &RunArgs::default()).is_err());
    // The shipped example parses and means what it says.
    std::fs::write(&cfg, include_str!("../examples/day.toml")).unwrap();
    let s = Settings::resolve(&common, Scenario::Mixed, &RunArgs::default()).unwrap();
    assert_eq!(
        (s.mixed.lookup_rate, s.mixed.full_sync_every),
        (200.0, 300.0)
    );
    assert_eq!(s.write.mix["record_patches"], 15);
}
