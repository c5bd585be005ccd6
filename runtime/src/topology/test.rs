use super::*;
use std::fs;
use std::path::PathBuf;

/// A fake `/sys` tree in a per-test temp dir, removed on drop.
struct FakeSys {
    root: PathBuf,
}

impl FakeSys {
    fn new(name: &str) -> FakeSys {
        let dir = format!("taopipe-topology-{}-{name}", std::process::id());
        let root = std::env::temp_dir().join(dir);
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).expect("create fake sysfs root");
        FakeSys { root }
    }

    fn file(&self, relative: &str, content: &str) -> &FakeSys {
        let path = self.root.join(relative);
        fs::create_dir_all(path.parent().expect("file has a parent")).expect("create dirs");
        fs::write(&path, format!("{content}\n")).expect("write fake sysfs file");
        self
    }

    fn online(&self, list: &str) -> &FakeSys {
        self.file("devices/system/cpu/online", list)
    }

    /// Writes `devices/system/cpu/cpu<N>/<relative>` for each cpu of `cpus`.
    fn cpus(
        &self,
        cpus: impl IntoIterator<Item = usize>,
        relative: &str,
        value: impl fmt::Display,
    ) -> &FakeSys {
        for cpu in cpus {
            self.file(
                &format!("devices/system/cpu/cpu{cpu}/{relative}"),
                &value.to_string(),
            );
        }
        self
    }

    fn sysfs(&self, allowed: &[usize]) -> Topology {
        Topology::from_sysfs(&self.root, allowed).expect("sysfs topology")
    }

    fn layout(&self, text: &str, allowed: &[usize]) -> Result<Topology, TopologyError> {
        Topology::from_layout(text, "x.txt", &self.root, allowed)
    }
}

impl Drop for FakeSys {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Jetson TX2: A57 cpus 0,3,4,5 in cluster 0, Denver cpus 1,2 in cluster 1,
/// same frequency and governor, no capacity.
fn jetson_tx2(name: &str) -> FakeSys {
    let sys = FakeSys::new(name);
    sys.online("0-5")
        .cpus([0, 3, 4, 5], "topology/cluster_id", 0)
        .cpus([1, 2], "topology/cluster_id", 1)
        .cpus(0..6, "cpufreq/cpuinfo_max_freq", 2_035_200)
        .cpus(0..6, "cpufreq/scaling_governor", "schedutil");
    sys
}

/// Intel hybrid: P-cores 0-7 with per-core cluster ids, E-cores 8-15.
fn alder_lake(name: &str, e_cluster_ids: [usize; 8]) -> FakeSys {
    let sys = FakeSys::new(name);
    sys.online("0-15")
        .file("devices/cpu_core/cpus", "0-7")
        .file("devices/cpu_atom/cpus", "8-15")
        .cpus(0..8, "cpufreq/cpuinfo_max_freq", 5_000_000)
        .cpus(8..16, "cpufreq/cpuinfo_max_freq", 3_800_000);
    for (cpu, e_cluster_id) in e_cluster_ids.into_iter().enumerate() {
        sys.cpus([cpu], "topology/cluster_id", cpu);
        sys.cpus([cpu + 8], "topology/cluster_id", e_cluster_id);
    }
    sys
}

fn ids(topo: &Topology) -> Vec<usize> {
    topo.cpus().iter().map(|cpu| cpu.id).collect()
}

fn cluster_ids(topo: &Topology, cluster: usize) -> Vec<usize> {
    topo.clusters()[cluster]
        .workers
        .iter()
        .map(|&w| topo.cpus()[w].id)
        .collect()
}

fn workers(topo: &Topology) -> Vec<Vec<usize>> {
    topo.clusters().iter().map(|c| c.workers.clone()).collect()
}

fn places(pairs: &[(usize, usize)]) -> Vec<Place> {
    pairs
        .iter()
        .map(|&(leader, width)| Place::new(leader, width))
        .collect()
}

/// Every cluster's workers list its cpus' cluster, and cluster ids are indices.
fn assert_consistent(topo: &Topology) {
    for (i, cluster) in topo.clusters().iter().enumerate() {
        assert_eq!(cluster.id, i);
        assert!(!cluster.workers.is_empty());
        assert!(cluster.workers.windows(2).all(|w| w[0] < w[1]));
        for &worker in &cluster.workers {
            assert_eq!(topo.cluster_of(worker), i);
        }
    }
    let total: usize = topo.clusters().iter().map(|c| c.workers.len()).sum();
    assert_eq!(total, topo.num_workers());
}

#[test]
fn topology_vm_with_only_online_is_one_cluster() {
    let sys = FakeSys::new("vm");
    sys.online("0-3");
    let topo = sys.sysfs(&[0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(ids(&topo), vec![0, 1, 2, 3]);
    assert_eq!(workers(&topo), vec![vec![0, 1, 2, 3]]);
    assert_eq!(topo.clusters()[0].name, "c0");
    assert!(
        topo.cpus()
            .iter()
            .all(|c| c.kind == CoreKind::Unknown && c.capacity.is_none() && c.governor.is_none())
    );
    assert!(topo.pins());
    assert!(topo.source().starts_with("sysfs at "));
    assert_eq!(topo.allowed_widths(0), &[1, 2, 3, 4]);
    assert_eq!(topo.allowed_widths(3), &[1]);
    assert_consistent(&topo);
}

#[test]
fn topology_without_online_file_uses_allowed() {
    let sys = FakeSys::new("no-online");
    let topo = sys.sysfs(&[3, 1, 2, 1]);
    assert_eq!(ids(&topo), vec![1, 2, 3]);
    assert_eq!(topo.clusters().len(), 1);
}

#[test]
fn topology_garbled_files_fall_back() {
    let sys = FakeSys::new("garbled");
    sys.online("zero-three")
        .cpus(0..2, "cpu_capacity", "lots")
        .cpus(0..2, "topology/cluster_id", -1)
        .cpus(0..2, "cpufreq/scaling_governor", "");
    let topo = sys.sysfs(&[0, 1]);
    assert_eq!(ids(&topo), vec![0, 1]);
    assert_eq!(topo.clusters().len(), 1);
    assert_eq!(topo.cpus()[0].capacity, None);
    assert_eq!(topo.cpus()[0].governor, None);
}

#[test]
fn topology_jetson_tx2_splits_by_cluster_id() {
    let sys = jetson_tx2("tx2");
    let topo = sys.sysfs(&[0, 1, 2, 3, 4, 5]);
    assert_eq!(ids(&topo), vec![0, 3, 4, 5, 1, 2]);
    assert_eq!(workers(&topo), vec![vec![0, 1, 2, 3], vec![4, 5]]);
    assert_eq!(cluster_ids(&topo, 1), vec![1, 2]);
    assert_eq!(topo.cpus()[0].max_freq_khz, Some(2_035_200));
    assert_eq!(topo.cpus()[0].governor.as_deref(), Some("schedutil"));
    assert_consistent(&topo);
}

#[test]
fn topology_higher_capacity_cluster_comes_first() {
    let sys = jetson_tx2("tx2-capacity");
    sys.cpus([1, 2], "cpu_capacity", 1024)
        .cpus([0, 3, 4, 5], "cpu_capacity", 800);
    let topo = sys.sysfs(&[0, 1, 2, 3, 4, 5]);
    assert_eq!(ids(&topo), vec![1, 2, 0, 3, 4, 5]);
    assert_eq!(workers(&topo), vec![vec![0, 1], vec![2, 3, 4, 5]]);
    assert_eq!(topo.cpus()[0].capacity, Some(1024));
}

#[test]
fn topology_cluster_id_split_that_leaves_a_singleton_is_refused() {
    let sys = FakeSys::new("singleton");
    sys.online("0-3")
        .cpus(0..3, "topology/cluster_id", 0)
        .cpus([3], "topology/cluster_id", 1);
    assert_eq!(sys.sysfs(&[0, 1, 2, 3]).clusters().len(), 1);
}

#[test]
fn topology_intel_hybrid_is_p_then_e() {
    let sys = alder_lake("hybrid", [8; 8]);
    let topo = sys.sysfs(&(0..16).collect::<Vec<_>>());
    assert_eq!(topo.clusters().len(), 2);
    assert_eq!(topo.clusters()[0].name, "P-cores");
    assert_eq!(topo.clusters()[1].name, "E-cores");
    assert_eq!(cluster_ids(&topo, 0), (0..8).collect::<Vec<_>>());
    assert_eq!(cluster_ids(&topo, 1), (8..16).collect::<Vec<_>>());
    assert_eq!(topo.cpus()[0].kind, CoreKind::Performance);
    assert_eq!(topo.cpus()[15].kind, CoreKind::Efficiency);
    assert_consistent(&topo);
}

#[test]
fn topology_intel_e_core_modules_stay_separate() {
    let sys = alder_lake("hybrid-modules", [8, 8, 8, 8, 9, 9, 9, 9]);
    let topo = sys.sysfs(&(0..16).collect::<Vec<_>>());
    let names: Vec<&str> = topo.clusters().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["P-cores", "E-cores/c1", "E-cores/c2"]);
    assert_eq!(cluster_ids(&topo, 2), vec![12, 13, 14, 15]);
}

#[test]
fn topology_x86_symmetric_with_per_core_cluster_id_is_one_cluster() {
    let sys = FakeSys::new("x86");
    sys.online("0-15")
        .cpus(0..16, "cpufreq/cpuinfo_max_freq", 4_000_000);
    for cpu in 0..16 {
        sys.cpus([cpu], "topology/cluster_id", cpu);
    }
    let topo = sys.sysfs(&(0..16).collect::<Vec<_>>());
    assert_eq!(workers(&topo), vec![(0..16).collect::<Vec<_>>()]);
}

#[test]
fn topology_governor_splits_clusters() {
    let sys = FakeSys::new("governor");
    sys.online("0-3")
        .cpus(0..2, "cpufreq/scaling_governor", "performance")
        .cpus(2..4, "cpufreq/scaling_governor", "powersave");
    let topo = sys.sysfs(&[0, 1, 2, 3]);
    assert_eq!(workers(&topo), vec![vec![0, 1], vec![2, 3]]);
    assert_eq!(topo.cpus()[2].governor.as_deref(), Some("powersave"));
    let text = topo.to_string();
    assert!(
        text.contains("c0: cpus 0-1 -> workers 0-1, governor performance"),
        "{text}"
    );
    assert!(
        text.contains("c1: cpus 2-3 -> workers 2-3, governor powersave"),
        "{text}"
    );
}

#[test]
fn topology_allowed_excludes_cpus() {
    let sys = FakeSys::new("allowed");
    sys.online("0-7");
    let topo = sys.sysfs(&[1, 3, 5, 9]);
    assert_eq!(ids(&topo), vec![1, 3, 5]);
    let err = Topology::from_sysfs(&sys.root, &[8, 9]).expect_err("no usable cpu");
    assert!(matches!(err, TopologyError::NoUsableCpu { .. }));
    assert!(err.to_string().contains("8-9"), "{err}");
}

#[test]
fn topology_allowed_excludes_cpus_of_a_cluster() {
    let sys = jetson_tx2("tx2-allowed");
    let topo = sys.sysfs(&[0, 2, 3, 5]);
    assert_eq!(ids(&topo), vec![0, 3, 5, 2]);
    assert_eq!(workers(&topo), vec![vec![0, 1, 2], vec![3]]);
}

#[test]
fn topology_display_describes_clusters() {
    let sys = alder_lake("display", [8; 8]);
    let text = sys.sysfs(&(0..16).collect::<Vec<_>>()).to_string();
    assert!(text.contains("16 workers from sysfs at"), "{text}");
    assert!(text.contains("(pinned), 2 clusters, 136 places"), "{text}");
    assert!(
        text.contains("P-cores: cpus 0-7 -> workers 0-7, performance cores, max 5000 MHz"),
        "{text}"
    );
    assert!(
        text.contains("E-cores: cpus 8-15 -> workers 8-15, efficiency cores, max 3800 MHz"),
        "{text}"
    );
}

const XITAO_EXAMPLE: &str = "0 1 2 3 4 5\n1 2\n1\n1 2\n1\n1 2\n1\n";

#[test]
fn topology_layout_xitao_example() {
    let sys = FakeSys::new("layout-xitao");
    sys.online("0-7");
    let topo = sys
        .layout(XITAO_EXAMPLE, &(0..8).collect::<Vec<_>>())
        .expect("layout");
    assert_eq!(ids(&topo), vec![0, 1, 2, 3, 4, 5]);
    let widths: Vec<&[usize]> = (0..6).map(|l| topo.allowed_widths(l)).collect();
    assert_eq!(
        widths,
        vec![&[1, 2][..], &[1], &[1, 2], &[1], &[1, 2], &[1]]
    );
    assert_eq!(topo.source(), "layout file x.txt");
    assert!(topo.pins());
    let expected = places(&[
        (0, 1),
        (0, 2),
        (1, 1),
        (2, 1),
        (2, 2),
        (3, 1),
        (4, 1),
        (4, 2),
        (5, 1),
    ]);
    assert_eq!(topo.places(), expected);
}

#[test]
fn topology_layout_accepts_commas_ranges_comments_and_blank_lines() {
    let sys = FakeSys::new("layout-syntax");
    let text = "# three threads\n\n0-1,2\n2, 1,3,1\n\n  1 2 # a pair\n# last\n1\n";
    let topo = sys.layout(text, &[0, 1, 2]).expect("layout");
    assert_eq!(ids(&topo), vec![0, 1, 2]);
    assert_eq!(topo.allowed_widths(0), &[1, 2, 3]);
    assert_eq!(topo.allowed_widths(1), &[1, 2]);
    assert_eq!(topo.allowed_widths(2), &[1]);
}

#[test]
fn topology_layout_keeps_file_order_with_sysfs_clusters() {
    let sys = jetson_tx2("layout-tx2");
    let text = "1 0 2 3 4 5\n1 2\n1\n1 2\n1\n1 2\n1\n";
    let topo = sys.layout(text, &[0, 1, 2, 3, 4, 5]).expect("layout");
    assert_eq!(ids(&topo), vec![1, 0, 2, 3, 4, 5]);
    assert_eq!(workers(&topo), vec![vec![1, 3, 4, 5], vec![0, 2]]);
    assert!(
        topo.to_string().contains("c1: cpus 1-2 -> workers 0,2"),
        "{topo}"
    );
    assert_consistent(&topo);
}

#[test]
fn topology_layout_subset_keeps_hardware_clusters() {
    let sys = jetson_tx2("layout-tx2-subset");
    let topo = sys
        .layout("1 0 3\n1\n1 2\n1\n", &[0, 1, 2, 3, 4, 5])
        .expect("layout");
    assert_eq!(workers(&topo), vec![vec![1, 2], vec![0]]);
    assert_eq!(cluster_ids(&topo, 0), vec![0, 3]);
}

#[test]
fn topology_layout_errors_name_line_and_token() {
    let sys = FakeSys::new("layout-errors");
    sys.online("0-3");
    let allowed = [0, 1, 2, 3, 9];
    let cases: [(&str, usize, &str, &str); 14] = [
        ("0 1 9\n1\n1\n1\n", 1, "cpu 9", "LayoutCpuUnusable"),
        ("0 7\n1\n1\n", 1, "cpu 7", "LayoutCpuUnusable"),
        (
            "0 1 1\n1\n1\n1\n",
            1,
            "cpu 1 listed twice",
            "LayoutCpuTwice",
        ),
        (
            "0-2,1\n1\n1\n1\n",
            1,
            "cpu 1 listed twice",
            "LayoutCpuTwice",
        ),
        ("0 x\n1\n1\n", 1, "`x`", "LayoutToken"),
        ("3-1\n1\n", 1, "`3-1`", "LayoutToken"),
        ("# c\n\n0 1\n1 0\n1\n", 4, "width 0", "LayoutWidth"),
        ("0 1\n1\n2\n", 3, "width 2", "LayoutWidth"),
        ("0 1\n1 two\n1\n", 2, "`two`", "LayoutToken"),
        ("0 1\n1 -2\n1\n", 2, "`-2`", "LayoutToken"),
        ("0 1\n1\n", 2, "found 1", "LayoutTooFewLines"),
        ("0 1\n1\n1\n\n1 2\n", 5, "`1 2`", "LayoutTooManyLines"),
        ("0 1\n, ,\n1\n", 2, "no width", "LayoutEmptyLine"),
        (",\n1\n", 1, "no CPU", "LayoutEmptyLine"),
    ];
    for (text, line, token, variant) in cases {
        let err = sys.layout(text, &allowed).expect_err(text);
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("x.txt:{line}: ")),
            "{text:?}: {message}"
        );
        assert!(message.contains(token), "{text:?}: {message}");
        assert!(format!("{err:?}").starts_with(variant), "{text:?}: {err:?}");
    }
}

#[test]
fn topology_layout_huge_width_is_an_error_not_an_overflow() {
    let sys = FakeSys::new("layout-huge-width");
    sys.online("0-1");
    // Leader 1 plus the largest width overflowed the fit check.
    let text = format!("0 1\n1\n{}\n", usize::MAX);
    let err = sys.layout(&text, &[0, 1]).expect_err(&text);
    assert!(
        matches!(
            err,
            TopologyError::LayoutWidth {
                line: 3,
                leader: 1,
                width: usize::MAX,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(&usize::MAX.to_string()), "{err}");
}

#[test]
fn topology_layout_errors_quote_long_tokens_shortened() {
    let sys = FakeSys::new("layout-long-token");
    sys.online("0-1");
    let long = "z".repeat(10_000_000);
    let cut = format!("`{}… (10000000 bytes in all)`", "z".repeat(40));
    for text in [
        format!("0 {long}\n1\n1\n"),
        format!("0 1\n1 {long}\n1\n"),
        format!("0 1\n1\n1\n{long}\n"),
    ] {
        let err = sys.layout(&text, &[0, 1]).expect_err("bad layout");
        let message = err.to_string();
        assert!(
            message.len() < 200,
            "{} bytes: {message:.200}",
            message.len()
        );
        assert!(message.contains(&cut), "{message}");
        assert!(
            format!("{err:?}").len() < 400,
            "the error holds the whole token"
        );
    }
}

#[test]
fn topology_layout_empty_is_an_error() {
    let sys = FakeSys::new("layout-empty");
    for text in ["", "\n\n", "# nothing\n  # here\n"] {
        let err = sys.layout(text, &[0]).expect_err(text);
        assert!(matches!(err, TopologyError::EmptyLayout { .. }), "{err:?}");
        assert!(err.to_string().starts_with("x.txt: empty layout"), "{err}");
    }
}

#[test]
fn topology_layout_file_reads_and_reports_path() {
    let sys = FakeSys::new("layout-file");
    let cpu = allowed_cpus()[0];
    sys.file("layout.txt", &format!("{cpu}\n1"));
    let path = sys.root.join("layout.txt");
    let topo = Topology::from_layout_file(&path).expect("layout file");
    assert_eq!(ids(&topo), vec![cpu]);
    assert_eq!(topo.source(), format!("layout file {}", path.display()));

    let missing = sys.root.join("missing.txt");
    let err = Topology::from_layout_file(&missing).expect_err("missing file");
    assert!(matches!(err, TopologyError::ReadLayout { .. }));
    assert!(err.to_string().contains("missing.txt"), "{err}");
}

#[test]
fn topology_layout_file_too_large_is_refused_unread() {
    let sys = FakeSys::new("layout-large");
    // A sparse 8 GiB file: refused from its size, without a byte read.
    let huge = sys.root.join("huge.txt");
    fs::File::create(&huge)
        .and_then(|f| f.set_len(8 << 30))
        .expect("sparse file");
    let err = Topology::from_layout_file(&huge).expect_err("huge layout");
    assert!(
        matches!(err, TopologyError::LayoutTooLarge { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("huge.txt") && text.contains("8589934592 bytes"),
        "{text}"
    );
    // A device with no size and no end: refused after MAX_LAYOUT_BYTES.
    #[cfg(unix)]
    {
        let err = Topology::from_layout_file(Path::new("/dev/zero")).expect_err("/dev/zero");
        let text = err.to_string();
        assert!(
            text.contains("/dev/zero") && text.contains("more than that"),
            "{text}"
        );
    }
    // Not UTF-8: an error naming the file.
    let binary = sys.root.join("binary.txt");
    fs::write(&binary, [0xff, 0xfe, b'0']).expect("binary file");
    let err = Topology::from_layout_file(&binary).expect_err("binary layout");
    assert!(matches!(err, TopologyError::ReadLayout { .. }), "{err:?}");
    assert!(err.to_string().contains("binary.txt"), "{err}");
}

#[test]
fn topology_detect_finds_this_machine() {
    if std::env::var_os(LAYOUT_ENV).is_some() {
        return;
    }
    let topo = Topology::detect().expect("detect");
    assert!(topo.num_workers() >= 1);
    assert_eq!(topo.source(), "sysfs");
    assert_consistent(&topo);
}

#[test]
fn topology_virtual_clusters() {
    let topo = Topology::virtual_clusters(&[2, 3]).expect("virtual");
    assert_eq!(ids(&topo), vec![0, 1, 2, 3, 4]);
    assert_eq!(workers(&topo), vec![vec![0, 1], vec![2, 3, 4]]);
    assert!(!topo.pins());
    assert_eq!(topo.source(), "virtual");
    assert!(
        topo.to_string().contains("c1: cpus 2-4 -> workers 2-4\n"),
        "{topo}"
    );
    assert_consistent(&topo);
}

#[test]
fn topology_bad_virtual_sizes_are_errors() {
    assert!(Topology::symmetric(0).is_err());
    for sizes in [
        &[][..],
        &[2, 0],
        &[usize::MAX, 2],
        &[MAX_VIRTUAL_WORKERS, 1],
    ] {
        let err = Topology::virtual_clusters(sizes).expect_err("bad sizes");
        assert!(matches!(err, TopologyError::BadVirtual { .. }), "{err:?}");
    }
    let err = Topology::virtual_clusters(&[2, 0]).expect_err("zero size");
    assert!(err.to_string().contains("cluster 1 has size 0"), "{err}");
    assert_eq!(
        Topology::symmetric(MAX_VIRTUAL_WORKERS)
            .map(|t| t.num_workers())
            .ok(),
        Some(MAX_VIRTUAL_WORKERS)
    );
}

#[test]
fn topology_restrict_keeps_topology_order() {
    let sys = jetson_tx2("restrict");
    let topo = sys
        .sysfs(&[0, 1, 2, 3, 4, 5])
        .restrict(&[5, 1, 4])
        .expect("restrict");
    assert_eq!(ids(&topo), vec![4, 5, 1]);
    assert_eq!(workers(&topo), vec![vec![0, 1], vec![2]]);
    assert_eq!(topo.allowed_widths(0), &[1, 2, 3]);
    assert_eq!(topo.allowed_widths(2), &[1]);
    assert!(topo.pins());
    assert!(
        topo.source().ends_with("restricted to cpus 5,1,4"),
        "{}",
        topo.source()
    );
    assert_consistent(&topo);
}

#[test]
fn topology_restrict_renumbers_clusters() {
    let topo = Topology::virtual_clusters(&[2, 2, 2])
        .expect("virtual")
        .restrict(&[0, 4, 5])
        .expect("restrict");
    assert_eq!(workers(&topo), vec![vec![0], vec![1, 2]]);
    assert_eq!(topo.cluster_of(2), 1);
    assert_eq!(topo.cpus()[1].cluster, 1);
    assert_consistent(&topo);
}

#[test]
fn topology_restrict_keeps_layout_widths_that_fit() {
    let sys = FakeSys::new("restrict-layout");
    let topo = sys
        .layout("0 1 2 3\n1 2 4\n2\n1 2\n1\n", &[0, 1, 2, 3])
        .expect("layout");
    let sub = topo.restrict(&[0, 2, 3]).expect("restrict");
    let widths: Vec<&[usize]> = (0..3).map(|l| sub.allowed_widths(l)).collect();
    assert_eq!(widths, vec![&[1, 2][..], &[1, 2], &[1]]);
    let alone = topo.restrict(&[1]).expect("restrict");
    assert_eq!(alone.allowed_widths(0), &[1]);
}

#[test]
fn topology_restrict_errors() {
    let topo = Topology::symmetric(4).expect("symmetric");
    let err = topo.restrict(&[1, 9]).expect_err("unknown cpu");
    assert!(
        matches!(err, TopologyError::UnknownCpu { cpu: 9, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("cpu 9") && err.to_string().contains("0-3"),
        "{err}"
    );
    let err = topo.restrict(&[1, 2, 1]).expect_err("repeated cpu");
    assert!(
        matches!(err, TopologyError::RepeatedCpu { cpu: 1 }),
        "{err:?}"
    );
    assert!(topo.restrict(&[]).is_err());
}

#[test]
fn topology_places_lists_exactly_the_allowed_places() {
    let topo = Topology::symmetric(3).expect("symmetric");
    assert_eq!(
        topo.places(),
        places(&[(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 1)])
    );
    let sys = FakeSys::new("places");
    let layout = sys
        .layout(XITAO_EXAMPLE, &[0, 1, 2, 3, 4, 5])
        .expect("layout");
    for topo in [topo, layout] {
        let listed = topo.places();
        let n = topo.num_workers();
        for leader in 0..n + 2 {
            for width in 0..n + 2 {
                let place = Place::new(leader, width);
                assert_eq!(topo.is_allowed(place), listed.contains(&place), "{place:?}");
            }
        }
        assert!(
            listed
                .iter()
                .all(|p| p.width() >= 1 && p.leader() + p.width() <= n)
        );
    }
}

#[test]
fn topology_allowed_widths_of_a_non_worker_is_empty() {
    let topo = Topology::symmetric(2).expect("symmetric");
    assert!(topo.allowed_widths(2).is_empty());
    assert!(!topo.is_allowed(Place::new(2, 1)));
}
