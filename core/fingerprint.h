// The fingerprint document ("schema": "cutover.fingerprint/1"): what `cutover probe collect`
// learns about a host or an image: OS, CPU, memory, NVIDIA driver, GPUs, CUDA toolkits, GPU
// libraries, frameworks, environment, network, and the problems met while collecting.
//
// It lives in core because compat and report embed it. The JSON form is specified by
// docs/schemas/fingerprint-1.json; key names are a public contract (reports, policies and other
// tools read them). Unknown values are JSON null (std::optional empty), never invented.
// Bump kFingerprintSchema (and add fingerprint-<n>.json) on any incompatible change.
//
// Thread-safety: plain values.
#ifndef CUTOVER_CORE_FINGERPRINT_H_
#define CUTOVER_CORE_FINGERPRINT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cutover {

inline constexpr char kFingerprintSchema[] = "cutover.fingerprint/1";

// One problem met while collecting. severity: "error" | "warning" | "info"; code: a stable
// dotted name ("driver.missing", "file.unreadable", ...).
struct Finding {
  std::string severity;
  std::string code;
  std::string message;
  bool operator==(const Finding&) const = default;
};

struct ContainerInfo {
  bool detected = false;
  std::optional<std::string> runtime;  // "docker" | "podman" | "containerd" | "kubernetes" | ...
  std::vector<std::string> hints;      // what gave it away ("/.dockerenv", "cgroup:docker", ...)
};

struct OsInfo {
  std::optional<std::string> id;          // os-release ID ("ubuntu")
  std::optional<std::string> version_id;  // os-release VERSION_ID ("22.04")
  std::optional<std::string> pretty_name;
  std::optional<std::string> kernel;  // "5.15.0-105-generic"
  std::optional<std::string> glibc;   // "2.35"
  std::optional<std::string> arch;    // "x86_64" | "aarch64"
  ContainerInfo container;
};

struct CpuInfo {
  std::optional<std::string> model;
  std::optional<int> cores;       // logical CPUs listed in /proc/cpuinfo
  std::optional<int> numa_nodes;  // /sys/devices/system/node/node*
};

// How the GPUs may be shared, from what this host itself can see. Time-slicing configured in a
// Kubernetes device plugin (replicas) is not visible on the node; only its traces are hinted.
struct SharingInfo {
  // NVML virtualization mode of the GPUs: "none" | "passthrough" | "vgpu" | "host_vgpu" |
  // "host_vsga" | "unknown(<n>)"; "vgpu" (a guest of NVIDIA vGPU) also from files (a
  // /proc/driver/nvidia/gpus/*/information that names a virtual GPU, or the GRID guest driver).
  std::optional<std::string> virtualization_mode;
  // Hints of sharing: "mig", "vgpu_guest", "mps_pipe_dir:<dir>", "mps_control_daemon",
  // "env:CUDA_MPS_PIPE_DIRECTORY", "env:NVIDIA_VISIBLE_DEVICES=all", ... (see collect_gpu.cc).
  std::vector<std::string> hints;
};

struct DriverInfo {
  std::string status = "missing";                    // "ok" | "missing" | "error"
  std::optional<std::string> version;                // the driver version ("550.54.14")
  std::optional<std::string> cuda_version;           // highest CUDA the driver supports ("12.4")
  std::optional<std::string> source;                 // "nvml" | "procfs" | "libcuda"
  std::optional<std::string> error;                  // why, when status is not "ok"
  std::optional<std::string> kernel_module_version;  // /proc/driver/nvidia/version
  std::optional<std::string> kernel_module_flavor;   // "open" | "proprietary"
  std::optional<std::string> userspace_version;      // from libcuda.so.<version>
  std::optional<std::string> fabric_manager_version;
  bool container_toolkit = false;  // nvidia-container-toolkit / nvidia-container-cli present
  bool cdi = false;                // a CDI spec for nvidia.com/gpu present
  SharingInfo sharing;
};

struct EccInfo {
  std::optional<bool> enabled;
  std::optional<uint64_t> volatile_uncorrected;
  std::optional<uint64_t> aggregate_uncorrected;
};

struct RemappedRows {
  std::optional<bool> pending;
  std::optional<bool> failure;
};

struct MigInfo {
  std::optional<bool> enabled;
  std::optional<int> instances;
};

struct PcieInfo {
  std::optional<int> gen_current;
  std::optional<int> gen_max;
  std::optional<int> width_current;
  std::optional<int> width_max;
};

// Pages retired by dynamic page retirement (pre-Ampere; NVML nvmlDeviceGetRetiredPages_v2 and
// nvmlDeviceGetRetiredPagesPendingStatus). Null when the GPU or driver does not report them.
struct RetiredPages {
  std::optional<uint64_t> single_bit;  // retired for multiple single-bit ECC errors
  std::optional<uint64_t> double_bit;  // retired for a double-bit ECC error
  std::optional<bool> pending;         // a retirement waits for the next reboot / GPU reset
};

// An NVIDIA Xid event from the kernel log naming this GPU's PCI address.
struct GpuXidEvent {
  int xid = 0;
  std::string text;  // the log line from "NVRM: Xid"
  bool operator==(const GpuXidEvent&) const = default;
};

struct GpuInfo {
  int index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> pci_bus_id;          // "00000000:3B:00.0"
  std::optional<std::string> pci_device_id;       // "0x2330"
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<uint64_t> memory_mib;
  std::optional<std::string> generation;  // "Hopper"
  std::optional<std::string> vbios;
  std::string source;  // "nvml" | "procfs"
  EccInfo ecc;
  RemappedRows remapped_rows;
  MigInfo mig;
  PcieInfo pcie;
  std::optional<double> power_limit_w;
  std::vector<std::string> throttle_reasons;
  std::optional<bool> persistence_mode;
  std::vector<bool> nvlink_active;  // per link, where NVML gives it
  RetiredPages retired_pages;
  std::vector<GpuXidEvent> xid_events;  // from the kernel log, when one was read
};

struct ToolkitInfo {
  std::string version;  // "12.4.1" or "12.4"
  std::string path;     // "/usr/local/cuda-12.4"
  std::string source;   // "version.json" | "version.txt" | "nvcc" | "cuda.h"
};

struct LibraryInfo {
  std::string name;                    // "cudnn", "cudnn_ops", "cublasLt", "nccl-net-ofi", ...
  std::optional<std::string> version;  // best known version ("9.1.0")
  std::string path;                    // the file found ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9")
  // Where its links lead, when different; with --deep always (the file hashed and loaded).
  std::optional<std::string> real_path;
  std::optional<std::string> version_source;  // "file_name" | "header" | "dist-info" | "soname"
  std::string origin;  // "ld.so.conf" | "standard" | "LD_LIBRARY_PATH" | "cuda" | "pip"
  // The highest GLIBC_x.y symbol version its ELF .gnu.version_r needs ("2.34"); null when it
  // needs none or the file could not be read as ELF.
  std::optional<std::string> glibc_needed;
  // With --deep only (null otherwise):
  std::optional<std::string> sha256;          // of the real file, hex
  std::optional<std::string> loaded_version;  // asked of the library loaded in a child process
  // The GPU code embedded in its .nv_fatbin: "sm_90", "sm_100a", "compute_90" (PTX), sorted and
  // deduplicated; empty when it has none.
  std::optional<std::vector<std::string>> cuda_archs;
  std::optional<std::string> ptx_isa;  // the newest PTX ISA among its PTX entries ("9.0")
};

struct FrameworkInfo {
  std::string name;  // Python distribution name: "torch", "tensorflow", "jax", ...
  std::optional<std::string> version;
  std::optional<std::string> cuda;         // the CUDA it was built for ("12.4")
  std::optional<std::string> cudnn;        // the cuDNN it was built for or requires
  std::string path;                        // its site-packages directory
  std::vector<std::string> requires_dist;  // nvidia-* / cuda-related Requires-Dist entries
  // Where the version came from: "dist-info", "egg-info", or, with no package metadata, the
  // package's own version file ("torch/version.py"). Empty in documents written before it.
  std::string source;
  std::optional<std::string> git_version;  // torch/version.py's git_version, when read
};

struct InfinibandPort {
  std::string port;
  std::optional<std::string> state;       // "ACTIVE"
  std::optional<std::string> rate;        // "400 Gb/sec (4X NDR)"
  std::optional<std::string> link_layer;  // "InfiniBand" | "Ethernet"
};

struct InfinibandDevice {
  std::string device;  // "mlx5_0"
  std::optional<std::string> firmware;
  std::optional<std::string> board_id;
  std::vector<InfinibandPort> ports;
};

struct NetworkInfo {
  std::vector<InfinibandDevice> infiniband;
  bool nvidia_peermem = false;
  std::vector<std::string> gpudirect_modules;  // nvidia_peermem, nv_peer_mem, gdrdrv loaded
};

// What `collect --deep` did (absent without --deep).
struct DeepInfo {
  std::optional<std::string> hash_cache;  // the cache file used, null when none could be
  int hashes_from_cache = 0;              // libraries whose sha256 came from the cache
  int hashes_computed = 0;                // libraries hashed this time
  uint64_t bytes_hashed = 0;
  int loaded = 0;  // libraries loaded in a child and asked their version (0 with --root)
  bool operator==(const DeepInfo&) const = default;
};

struct CollectionInfo {
  std::vector<Finding> findings;
  double duration_ms = 0;
  std::string root = "/";
  bool live = true;  // NVML and the CUDA driver were asked (only with root "/")
  std::optional<std::string> collected_at;  // RFC 3339 UTC
  std::optional<std::string> cutover_version;
  std::optional<DeepInfo> deep;  // with --deep only
  // Where gpus[].xid_events came from ("/dev/kmsg"), or why none were read.
  std::optional<std::string> kernel_log;
};

struct Fingerprint {
  std::optional<std::string> hostname;
  OsInfo os;
  CpuInfo cpu;
  std::optional<uint64_t> memory_mib;
  DriverInfo driver;
  std::vector<GpuInfo> gpus;
  std::vector<ToolkitInfo> cuda_toolkits;  // JSON: "cuda": {"toolkits": [...]}
  std::vector<LibraryInfo> libraries;
  std::vector<FrameworkInfo> frameworks;
  std::map<std::string, std::string> env;
  NetworkInfo network;
  CollectionInfo collection;
};

// The JSON document (with "schema": kFingerprintSchema).
nlohmann::json FingerprintToJson(const Fingerprint& fp);

// Reads a document. InvalidArgument when it is not an object, has no or another "schema" (a
// newer one is named as such), or a field has the wrong type (the message names the field).
Result<Fingerprint> FingerprintFromJson(const nlohmann::json& doc);

// Parses JSON text, then FingerprintFromJson.
Result<Fingerprint> ParseFingerprint(std::string_view text);

}  // namespace cutover

#endif  // CUTOVER_CORE_FINGERPRINT_H_
