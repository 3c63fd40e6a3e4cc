//! The jobs a workfile may name: re-aim-7's job names, what each does in
//! fsmeter, and the unit re-aim counts it in ("factor": operations per run).

/// What kind of work a job is; the report groups per-job times by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Reads and writes 1 KiB blocks of a file (disk_*).
    Disk,
    /// Names in directories: creat/close, link/unlink, directory search, readdir.
    Namespace,
    /// fork, exec, shells, pipes, sockets, signals.
    Process,
    /// CPU and memory work (approximated: see the README).
    Compute,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Disk => "disk",
            Class::Namespace => "namespace",
            Class::Process => "process",
            Class::Compute => "compute",
        }
    }
}

/// Every job fsmeter implements. The discriminant indexes `CATALOG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum JobId {
    DiskRr,
    DiskRw,
    DiskRd,
    DiskWrt,
    DiskCp,
    SyncDiskRw,
    SyncDiskWrt,
    SyncDiskCp,
    SyncDiskUpdate,
    DiskDioRr,
    DiskDioRw,
    DiskDioRd,
    DiskDioWrt,
    DiskDioCp,
    DiskBrr,
    DiskBrw,
    DiskBrd,
    DiskBwrt,
    DiskBcp,
    DiskSrc,
    CreatClo,
    LinkTest,
    DirRtns1,
    ForkTest,
    ExecTest,
    ShellRtns1,
    ShellRtns2,
    ShellRtns3,
    PipeCpy,
    StreamPipe,
    DgramPipe,
    FifoTest,
    TcpTest,
    UdpTest,
    SharedMemory,
    SignalTest,
    AddDouble,
    AddFloat,
    AddInt,
    AddLong,
    AddShort,
    MulDouble,
    MulFloat,
    MulInt,
    MulLong,
    MulShort,
    DivDouble,
    DivFloat,
    DivInt,
    DivLong,
    DivShort,
    ArrayRtns,
    MatrixRtns,
    NewRaph,
    NumRtns1,
    Series1,
    Sieve,
    SortRtns1,
    StringRtns,
    TrigRtns,
    MemRtns1,
    MemRtns2,
    MiscRtns1,
    RamCopy,
    BrkTest,
    PageTest,
    JmpTest,
    FunCal,
    FunCal1,
    FunCal2,
    FunCal15,
}

pub struct JobInfo {
    pub id: JobId,
    pub name: &'static str,
    pub class: Class,
    /// Operations one run does, in `unit` (re-aim's registered factor); `None`
    /// for the disk jobs, whose count is the file size in KiB (or half of it).
    pub factor: Option<u64>,
    pub unit: &'static str,
}

const fn j(id: JobId, name: &'static str, class: Class, factor: Option<u64>, unit: &'static str) -> JobInfo {
    JobInfo { id, name, class, factor, unit }
}

use Class::*;
use JobId::*;

/// In `JobId` order (checked by a test).
pub const CATALOG: &[JobInfo] = &[
    j(DiskRr, "disk_rr", Disk, None, "KiB random reads"),
    j(DiskRw, "disk_rw", Disk, None, "KiB random writes"),
    j(DiskRd, "disk_rd", Disk, None, "KiB sequential reads"),
    j(DiskWrt, "disk_wrt", Disk, None, "KiB sequential writes"),
    j(DiskCp, "disk_cp", Disk, None, "KiB copied"),
    j(SyncDiskRw, "sync_disk_rw", Disk, None, "KiB O_SYNC random writes"),
    j(SyncDiskWrt, "sync_disk_wrt", Disk, None, "KiB O_SYNC sequential writes"),
    j(SyncDiskCp, "sync_disk_cp", Disk, None, "KiB O_SYNC copied"),
    j(SyncDiskUpdate, "sync_disk_update", Disk, None, "KiB O_SYNC updates"),
    j(DiskDioRr, "disk_dio_rr", Disk, None, "KiB O_DIRECT random reads"),
    j(DiskDioRw, "disk_dio_rw", Disk, None, "KiB O_DIRECT random writes"),
    j(DiskDioRd, "disk_dio_rd", Disk, None, "KiB O_DIRECT sequential reads"),
    j(DiskDioWrt, "disk_dio_wrt", Disk, None, "KiB O_DIRECT sequential writes"),
    j(DiskDioCp, "disk_dio_cp", Disk, None, "KiB O_DIRECT copied"),
    j(DiskBrr, "disk_brr", Disk, None, "KiB cached random reads"),
    j(DiskBrw, "disk_brw", Disk, None, "KiB cached random writes"),
    j(DiskBrd, "disk_brd", Disk, None, "KiB cached sequential reads"),
    j(DiskBwrt, "disk_bwrt", Disk, None, "KiB cached sequential writes"),
    j(DiskBcp, "disk_bcp", Disk, None, "KiB cached copies"),
    j(DiskSrc, "disk_src", Namespace, Some(75), "directory searches"),
    j(CreatClo, "creat_clo", Namespace, Some(1000), "file creations and closes"),
    j(LinkTest, "link_test", Namespace, Some(63), "link/unlink pairs"),
    j(DirRtns1, "dir_rtns_1", Namespace, Some(10_000), "directory entries read"),
    j(ForkTest, "fork_test", Process, Some(100), "task creations"),
    j(ExecTest, "exec_test", Process, Some(5), "program loads"),
    j(ShellRtns1, "shell_rtns_1", Process, Some(1), "shell scripts"),
    j(ShellRtns2, "shell_rtns_2", Process, Some(1), "shell scripts"),
    j(ShellRtns3, "shell_rtns_3", Process, Some(1), "shell scripts"),
    j(PipeCpy, "pipe_cpy", Process, Some(100), "pipe messages"),
    j(StreamPipe, "stream_pipe", Process, Some(100), "stream pipe messages"),
    j(DgramPipe, "dgram_pipe", Process, Some(100), "datagram pipe messages"),
    j(FifoTest, "fifo_test", Process, Some(100), "FIFO messages"),
    j(TcpTest, "tcp_test", Process, Some(90), "TCP/IP messages"),
    j(UdpTest, "udp_test", Process, Some(100), "UDP/IP datagrams"),
    j(SharedMemory, "shared_memory", Process, Some(100), "shared memory operations"),
    j(SignalTest, "signal_test", Process, Some(1000), "signal traps"),
    j(AddDouble, "add_double", Compute, Some(1_500_000), "loops of 12 double additions"),
    j(AddFloat, "add_float", Compute, Some(1_000_000), "loops of 12 float additions"),
    j(AddInt, "add_int", Compute, Some(5_000_000), "loops of 12 int additions"),
    j(AddLong, "add_long", Compute, Some(5_000_000), "loops of 12 long additions"),
    j(AddShort, "add_short", Compute, Some(2_000_000), "loops of 12 short additions"),
    j(MulDouble, "mul_double", Compute, Some(1_000_000), "loops of 12 double multiplies"),
    j(MulFloat, "mul_float", Compute, Some(1_000_000), "loops of 12 float multiplies"),
    j(MulInt, "mul_int", Compute, Some(20_000), "loops of 12 int multiplies"),
    j(MulLong, "mul_long", Compute, Some(20_000), "loops of 12 long multiplies"),
    j(MulShort, "mul_short", Compute, Some(25_000), "loops of 12 short multiplies"),
    j(DivDouble, "div_double", Compute, Some(250_000), "loops of 12 double divides"),
    j(DivFloat, "div_float", Compute, Some(250_000), "loops of 12 float divides"),
    j(DivInt, "div_int", Compute, Some(75_000), "loops of 12 int divides"),
    j(DivLong, "div_long", Compute, Some(75_000), "loops of 12 long divides"),
    j(DivShort, "div_short", Compute, Some(75_000), "loops of 12 short divides"),
    j(ArrayRtns, "array_rtns", Compute, Some(20), "linear systems solved"),
    j(MatrixRtns, "matrix_rtns", Compute, Some(100), "point transformations"),
    j(NewRaph, "new_raph", Compute, Some(200), "zeros found"),
    j(NumRtns1, "num_rtns_1", Compute, Some(100), "numeric functions"),
    j(Series1, "series_1", Compute, Some(100), "series evaluations"),
    j(Sieve, "sieve", Compute, Some(5), "integer sieves"),
    j(SortRtns1, "sort_rtns_1", Compute, Some(10), "sort operations"),
    j(StringRtns, "string_rtns", Compute, Some(100), "string manipulations"),
    j(TrigRtns, "trig_rtns", Compute, Some(10_000), "trigonometric functions"),
    j(MemRtns1, "mem_rtns_1", Compute, Some(30_000), "dynamic memory operations"),
    j(MemRtns2, "mem_rtns_2", Compute, Some(100), "block memory operations"),
    j(MiscRtns1, "misc_rtns_1", Compute, Some(10), "auxiliary loops"),
    j(RamCopy, "ram_copy", Compute, Some(25_020), "memory to memory copies"),
    j(BrkTest, "brk_test", Compute, Some(17_000), "memory mapping changes"),
    j(PageTest, "page_test", Compute, Some(1_700), "pages allocated and touched"),
    j(JmpTest, "jmp_test", Compute, Some(1000), "non-local returns"),
    j(FunCal, "fun_cal", Compute, Some(512_000), "function calls"),
    j(FunCal1, "fun_cal1", Compute, Some(512_000), "function calls"),
    j(FunCal2, "fun_cal2", Compute, Some(512_000), "function calls"),
    j(FunCal15, "fun_cal15", Compute, Some(512_000), "function calls"),
];

pub fn info(id: JobId) -> &'static JobInfo {
    &CATALOG[id as usize]
}

pub fn lookup(name: &str) -> Option<JobId> {
    CATALOG.iter().find(|j| j.name == name).map(|j| j.id)
}

/// Names re-aim registers that fsmeter does not run (none of them is in the
/// shared or disk workfile): the libaio jobs, compiled only on some builds.
pub const NOT_IMPLEMENTED: &[&str] = &["disk_aio_rr", "disk_aio_rw", "disk_aiodio_rr", "disk_aiodio_rw"];

/// 1 KiB blocks (re-aim's NBUFSIZE) per disk-job run: the jobs marked "sync"
/// in re-aim, except the update job, halve the count "so as not to pound disk".
pub fn disk_blocks(id: JobId, file_kib: u64) -> u64 {
    match id {
        SyncDiskRw | SyncDiskWrt | SyncDiskCp => file_kib / 2,
        _ => file_kib,
    }
}

/// Operations one run of the job does, in its unit.
pub fn units_per_run(id: JobId, file_kib: u64) -> u64 {
    match info(id).factor {
        Some(f) => f,
        None => disk_blocks(id, file_kib),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_in_id_order_and_names_are_unique() {
        for (i, j) in CATALOG.iter().enumerate() {
            assert_eq!(j.id as usize, i, "{}", j.name);
            assert_eq!(lookup(j.name), Some(j.id));
        }
        let mut names: Vec<_> = CATALOG.iter().map(|j| j.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CATALOG.len());
    }

    #[test]
    fn sync_jobs_halve_the_file_except_update() {
        assert_eq!(disk_blocks(SyncDiskWrt, 1034), 517);
        assert_eq!(disk_blocks(SyncDiskUpdate, 1034), 1034);
        assert_eq!(units_per_run(DiskRr, 20), 20);
        assert_eq!(units_per_run(LinkTest, 20), 63);
    }
}
