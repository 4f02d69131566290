//! How the project builds: the benchmark flow builds the load generator beside the
//! server, and that must not rebuild the server. Cargo builds a dependency once per
//! feature set, so every crate the server depends on must get the same features whether
//! or not the load generator is part of the build.

use std::collections::BTreeSet;

/// Each package of the build graph (normal and build dependencies) with its features,
/// when building `packages` together. A package may appear with two feature sets: built
/// for build scripts and macros, and for the program.
fn features(packages: &[&str]) -> BTreeSet<(String, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--locked", "--offline", "--prefix", "none"])
        .args(["-e", "normal,build", "-f", "{p}|{f}"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim_end_matches(" (*)").split_once('|'))
        .map(|(p, f)| (p.to_string(), f.to_string()))
        .collect()
}

#[test]
fn building_the_load_generator_does_not_rebuild_the_server() {
    let alone = features(&["recruitd"]);
    let together = features(&["recruitd", "recruitd-loadtest"]);
    let server: BTreeSet<&String> = alone.iter().map(|(p, _)| p).collect();
    let shared: BTreeSet<(String, String)> = together
        .iter()
        .filter(|(p, _)| server.contains(p))
        .cloned()
        .collect();
    let differing: Vec<String> = alone
        .symmetric_difference(&shared)
        .map(|(p, f)| {
            let side = match alone.contains(&(p.clone(), f.clone())) {
                true => "alone",
                false => "beside the load generator",
            };
            format!("{p} [{f}] only {side}")
        })
        .collect();
    assert!(
        differing.is_empty(),
        "these would be built twice (ask for the features in the server's Cargo.toml):\n{}",
        differing.join("\n")
    );
}
