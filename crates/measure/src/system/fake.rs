//! Synthetic /proc and /sys trees for tests: machines we do not have (two sockets of 192 CPUs,
//! eight NUMA nodes, CXL memory-only nodes), written from the kernel's documented file formats.
//! Nothing here is used by a real run.

use super::parse::format_cpulist;
use super::source::FakeFs;

/// The shape of a fake machine. CPU numbering follows the common x86 server layout: the first
/// hardware thread of every core first (socket by socket), then the SMT siblings in the same order.
#[derive(Debug, Clone, Copy)]
pub struct FakeMachine {
    /// Sockets.
    pub sockets: usize,
    /// Physical cores per socket.
    pub cores_per_socket: usize,
    /// Hardware threads per core (1 or 2).
    pub threads_per_core: usize,
    /// NUMA nodes per socket (NPS1, NPS2, NPS4), each with CPUs and memory.
    pub nodes_per_socket: usize,
    /// Extra nodes with memory and no CPUs (CXL expanders), numbered after the CPU nodes.
    pub memory_only_nodes: usize,
    /// Cores sharing one L3 instance (a CCX on AMD).
    pub cores_per_l3: usize,
    /// Memory per node in KiB.
    pub node_mem_kib: u64,
}

impl FakeMachine {
    /// Logical CPUs.
    pub fn cpus(&self) -> usize {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    fn cores(&self) -> usize {
        self.sockets * self.cores_per_socket
    }

    /// The CPU ids of physical core `core` (0-based across sockets), all its threads.
    fn core_threads(&self, core: usize) -> Vec<usize> {
        (0..self.threads_per_core)
            .map(|t| core + t * self.cores())
            .collect()
    }

    fn cores_cpus(&self, cores: std::ops::Range<usize>) -> String {
        let cpus: Vec<usize> = cores.flat_map(|c| self.core_threads(c)).collect();
        format_cpulist(&cpus)
    }

    /// Builds the file tree.
    pub fn build(&self) -> FakeFs {
        let mut fs = FakeFs::new();
        let cpu_dir = "/sys/devices/system/cpu";
        fs.insert(
            format!("{cpu_dir}/online"),
            format!("0-{}\n", self.cpus() - 1),
        );
        for core in 0..self.cores() {
            let socket = core / self.cores_per_socket;
            let l3_first = core / self.cores_per_l3 * self.cores_per_l3;
            for cpu in self.core_threads(core) {
                let d = format!("{cpu_dir}/cpu{cpu}");
                fs.insert(
                    format!("{d}/topology/physical_package_id"),
                    format!("{socket}\n"),
                );
                fs.insert(
                    format!("{d}/topology/core_id"),
                    format!("{}\n", core % self.cores_per_socket),
                );
                fs.insert(format!("{d}/cpufreq/scaling_governor"), "performance\n");
                let sibling_list = self.cores_cpus(core..core + 1);
                let l3_list = self.cores_cpus(l3_first..l3_first + self.cores_per_l3);
                let caches = [
                    (1, "Data", "32K", &sibling_list),
                    (1, "Instruction", "32K", &sibling_list),
                    (2, "Unified", "1024K", &sibling_list),
                    (3, "Unified", "32768K", &l3_list),
                ];
                for (i, (level, kind, size, shared)) in caches.iter().enumerate() {
                    let c = format!("{d}/cache/index{i}");
                    fs.insert(format!("{c}/level"), format!("{level}\n"));
                    fs.insert(format!("{c}/type"), format!("{kind}\n"));
                    fs.insert(format!("{c}/size"), format!("{size}\n"));
                    fs.insert(format!("{c}/shared_cpu_list"), format!("{shared}\n"));
                    fs.insert(format!("{c}/coherency_line_size"), "64\n");
                }
            }
        }
        self.add_nodes(&mut fs);
        self.add_proc(&mut fs);
        add_devices(&mut fs);
        fs
    }

    fn add_nodes(&self, fs: &mut FakeFs) {
        let cpu_nodes = self.sockets * self.nodes_per_socket;
        let total = cpu_nodes + self.memory_only_nodes;
        let cores_per_node = self.cores_per_socket / self.nodes_per_socket;
        for node in 0..total {
            let d = format!("/sys/devices/system/node/node{node}");
            let cpus = if node < cpu_nodes {
                self.cores_cpus(node * cores_per_node..(node + 1) * cores_per_node)
            } else {
                String::new()
            };
            fs.insert(format!("{d}/cpulist"), format!("{cpus}\n"));
            fs.insert(
                format!("{d}/meminfo"),
                format!(
                    "Node {node} MemTotal:       {} kB\nNode {node} MemFree:        {} kB\n",
                    self.node_mem_kib,
                    self.node_mem_kib - 1024
                ),
            );
            let socket_of = |n: usize| (n < cpu_nodes).then(|| n / self.nodes_per_socket);
            let distances: Vec<String> = (0..total)
                .map(|other| {
                    let d = match (socket_of(node), socket_of(other)) {
                        _ if node == other => 10,
                        (Some(a), Some(b)) if a == b => 12,
                        (Some(_), Some(_)) => 32,
                        _ => 50,
                    };
                    d.to_string()
                })
                .collect();
            fs.insert(
                format!("{d}/distance"),
                format!("{}\n", distances.join(" ")),
            );
        }
    }

    fn add_proc(&self, fs: &mut FakeFs) {
        let mut cpuinfo = String::new();
        let mut stat = String::from("cpu  1000 10 500 90000 20 30 40 0 0 0\n");
        for cpu in 0..self.cpus() {
            cpuinfo.push_str(&format!(
                "processor\t: {cpu}\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
                 model name\t: AMD EPYC 9654 96-Core Processor\ncpu MHz\t\t: 2400.000\n\
                 flags\t\t: fpu sse2 avx2 avx512f\n\n"
            ));
            stat.push_str(&format!("cpu{cpu} 3 0 1 234 0 0 0 0 0 0\n"));
        }
        stat.push_str("intr 0\nctxt 12345\nbtime 1700000000\nprocesses 100\n");
        let total_kib = self.node_mem_kib * (self.sockets * self.nodes_per_socket) as u64;
        fs.insert("/proc/cpuinfo", cpuinfo)
            .insert("/proc/stat", stat)
            .insert(
                "/proc/meminfo",
                format!(
                    "MemTotal:       {total_kib} kB\nMemFree:        {} kB\n\
                     MemAvailable:   {} kB\nSwapTotal:       8388604 kB\nSwapFree:        8388604 kB\n",
                    total_kib - 4096,
                    total_kib - 2048
                ),
            );
    }
}

/// Kernel, OS, THP, NIC and PCIe files shared by every fake machine; the PCIe NIC at
/// `0000:41:00.0` trains at x8 of its x16.
fn add_devices(fs: &mut FakeFs) {
    fs.insert("/proc/sys/kernel/osrelease", "6.4.3-0_fbk1\n")
        .insert("/proc/sys/kernel/hostname", "fake-384\n")
        .insert("/proc/sys/kernel/numa_balancing", "1\n")
        .insert("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1\n")
        .insert(
            "/etc/os-release",
            "ID=\"centos\"\nPRETTY_NAME=\"CentOS Stream 9\"\n",
        )
        .insert(
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never\n",
        )
        .insert(
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n",
        )
        .insert(
            "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
            "0\n",
        )
        .insert(
            "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
            "0\n",
        )
        .insert(
            "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
            "4\n",
        )
        .insert(
            "/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages",
            "4\n",
        )
        .insert("/sys/class/net/lo/operstate", "unknown\n")
        .insert("/sys/class/net/lo/mtu", "65536\n")
        .insert("/sys/class/net/eth0/speed", "100000\n")
        .insert("/sys/class/net/eth0/operstate", "up\n")
        .insert("/sys/class/net/eth0/mtu", "9000\n")
        .insert("/sys/class/net/eth0/device/vendor", "0x15b3\n");
    let pci = "/sys/bus/pci/devices";
    for (dev, cur_w, max_w, cur_s, max_s) in [
        (
            "0000:41:00.0",
            "8",
            "16",
            "16.0 GT/s PCIe",
            "16.0 GT/s PCIe",
        ),
        ("0000:c1:00.0", "4", "4", "16.0 GT/s PCIe", "16.0 GT/s PCIe"),
        ("0000:c2:00.0", "4", "4", "8.0 GT/s PCIe", "16.0 GT/s PCIe"),
    ] {
        fs.insert(
            format!("{pci}/{dev}/current_link_width"),
            format!("{cur_w}\n"),
        )
        .insert(format!("{pci}/{dev}/max_link_width"), format!("{max_w}\n"))
        .insert(
            format!("{pci}/{dev}/current_link_speed"),
            format!("{cur_s}\n"),
        )
        .insert(format!("{pci}/{dev}/max_link_speed"), format!("{max_s}\n"));
    }
    // A bridge-less device without link files (integrated endpoint).
    fs.insert(format!("{pci}/0000:00:00.0/class"), "0x060000\n");
}

/// Two sockets of 96 cores x 2 threads (384 CPUs), one node per socket, 24 L3s of 8 cores: the
/// machine in DCPerf's README example.
pub fn two_socket_384() -> FakeFs {
    FakeMachine {
        sockets: 2,
        cores_per_socket: 96,
        threads_per_core: 2,
        nodes_per_socket: 1,
        memory_only_nodes: 0,
        cores_per_l3: 8,
        node_mem_kib: 792_723_456,
    }
    .build()
}

/// The same 384 CPUs in NPS4 mode: eight nodes of 48 CPUs.
pub fn eight_nodes_384() -> FakeFs {
    FakeMachine {
        sockets: 2,
        cores_per_socket: 96,
        threads_per_core: 2,
        nodes_per_socket: 4,
        memory_only_nodes: 0,
        cores_per_l3: 8,
        node_mem_kib: 198_180_864,
    }
    .build()
}

/// 384 CPUs in NPS3-like mode (six CPU nodes) plus two CXL memory-only nodes: eight nodes.
pub fn eight_nodes_with_cxl() -> FakeFs {
    FakeMachine {
        sockets: 2,
        cores_per_socket: 96,
        threads_per_core: 2,
        nodes_per_socket: 3,
        memory_only_nodes: 2,
        cores_per_l3: 8,
        node_mem_kib: 264_241_152,
    }
    .build()
}
