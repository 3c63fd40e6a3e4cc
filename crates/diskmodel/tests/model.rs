//! The model on a simulated clock: seek curve, rotation, segment buffer, write cache, flush, queue.
//!
//! Every time below is the model's own (ns), never this machine's.

use fsmeter_diskmodel::geometry::SECTOR_BYTES;
use fsmeter_diskmodel::{Drive, DriveSpec, Model, Op, Request};

const MS: f64 = 1e6;

/// A small drive: 7,200 rpm, 2 surfaces, two zones (outer 400, inner 200 sectors per track),
/// Lee's seek curve from 1 / 8 / 16 ms, no controller overhead unless a test sets one.
fn spec(read_ahead: u32, write_cache: bool, policy: &str, depth: u32) -> DriveSpec {
    let text = format!(
        r#"{{
        "name": "test", "rpm": 7200, "surfaces": 2,
        "zones": [
          {{"first_cylinder": 0, "last_cylinder": 4999, "sectors_per_track": 400, "track_skew": 40, "cylinder_skew": 60}},
          {{"first_cylinder": 5000, "last_cylinder": 9999, "sectors_per_track": 200, "track_skew": 20, "cylinder_skew": 30}}
        ],
        "seek": {{"track_to_track_ms": 1.0, "average_ms": 8.0, "full_stroke_ms": 16.0}},
        "write_settle_ms": 0.5, "head_switch_ms": 0.5,
        "bus_mb_s": 150,
        "cache": {{"segments": 4, "segment_sectors": 2048, "read_ahead_sectors": {read_ahead},
                  "write_cache": {write_cache}, "write_cache_sectors": 8192}},
        "queue": {{"policy": "{policy}", "depth": {depth}}}
    }}"#
    );
    DriveSpec::from_json(&text).unwrap()
}

fn model(read_ahead: u32, write_cache: bool) -> Model {
    Model::new(Drive::new(&spec(read_ahead, write_cache, "fifo", 1)).unwrap())
}

fn read(lbn: u64, sectors: u64) -> Request {
    Request { op: Op::Read, lbn, sectors }
}

fn write(lbn: u64, sectors: u64) -> Request {
    Request { op: Op::Write, lbn, sectors }
}

const T0: u64 = 1_000_000_000_000; // an arbitrary start of the simulated clock

#[test]
fn geometry_and_capacity() {
    let m = model(0, false);
    let g = &m.drive.geometry;
    assert_eq!(g.capacity, 5000 * 2 * 400 + 5000 * 2 * 200);
    assert_eq!(m.drive.capacity_bytes(), g.capacity * SECTOR_BYTES);
    let p = g.place(5000 * 2 * 400 + 2 * 200 + 5);
    assert_eq!((p.zone, p.track.cylinder, p.track.surface, p.index), (1, 5001, 0, 5));
    // the media rate falls from the outer to the inner zone: half the sectors per track
    let outer = m.drive.streaming_rate(0);
    let inner = m.drive.streaming_rate(g.first_lbn_of_cylinder(9998).unwrap());
    assert!(outer > 1.9 * inner && outer < 2.1 * inner, "outer {outer} inner {inner}");
    // By hand: a cylinder is 2 tracks of 400 sectors; the head switch (0.5 ms) fits in the 40-sector
    // track skew (0.833 ms) and the one-cylinder seek (1 ms) in the 60-sector cylinder skew (1.25 ms),
    // so a cylinder takes 800 + 40 + 60 = 900 sector times, 2.25 turns of 8.333 ms: 800 x 512 bytes
    // in 18.75 ms = 21.845 MB/s, below the 24.6 MB/s of a track alone.
    let by_hand = 800.0 * 512.0 / 18.75e-3;
    assert!((outer / by_hand - 1.0).abs() < 1e-6, "{outer} vs {by_hand}");
}

#[test]
fn seek_time_follows_the_curve() {
    let mut m = model(0, false);
    let g = m.drive.geometry.clone();
    let mut t = T0;
    // from cylinder 0 to cylinders at growing distances and back: the positioning part of each
    // service is the curve's seek for that distance
    for (k, &d) in [1u32, 10, 100, 1000, 4000, 9999].iter().enumerate() {
        let lbn = g.first_lbn_of_cylinder(d).unwrap();
        // a block of cylinder 0 not read before (so not in the buffer): the head goes back there
        let back = m.serve(read(16 * k as u64, 8), t);
        assert!(!back.hit);
        t = back.end;
        let s = m.serve(read(lbn, 8), t);
        assert!((s.seek_ns - m.drive.seek.ms(d) * MS).abs() < 1.0, "distance {d}: {} ns", s.seek_ns);
        t = s.end;
    }
    assert!((m.drive.seek.ms(9999) - 16.0).abs() < 1e-6);
    assert!((m.drive.seek.ms(1) - 1.0).abs() < 1e-9);
}

#[test]
fn a_block_just_behind_the_head_waits_nearly_a_turn_one_just_ahead_does_not() {
    let rev = m_rev();
    for (delta, behind) in [(-9i64, true), (-30, true), (0, false), (2, false), (20, false)] {
        let mut m = model(0, false);
        let first = m.serve(read(1000, 8), T0);
        // The head now sits at the start of block 1008. Ask, the instant the drive is free, for a
        // block on the same track `delta` blocks from there (blocks 1000..1008 are in the buffer:
        // the ones behind the head asked for here were not read).
        let lbn = (1008 + delta) as u64;
        let s = m.serve(read(lbn, 1), first.end);
        assert_eq!(s.seek_ns, 0.0, "same track");
        // 400 blocks per track on the outer zone: a block k blocks behind the head comes round
        // after (1 - k/400) of a turn, one k ahead after k/400
        let expected = if behind { rev * (1.0 + delta as f64 / 400.0) } else { rev * delta as f64 / 400.0 };
        assert!(
            (s.rotation_ns - expected).abs() < 2e-3 * rev,
            "delta {delta}: waited {} ns, expected {expected}",
            s.rotation_ns
        );
        if behind {
            assert!(s.rotation_ns > 0.9 * rev, "delta {delta}: waited {} of a {rev} ns turn", s.rotation_ns);
        } else {
            assert!(s.rotation_ns < 0.06 * rev, "delta {delta}: waited {} of a {rev} ns turn", s.rotation_ns);
        }
    }
}

fn m_rev() -> f64 {
    60e9 / 7200.0
}

#[test]
fn rotation_is_tracked_over_time() {
    // The same request issued a quarter turn later waits a quarter turn less (mod one turn).
    let rev = m_rev();
    let mut waits = vec![];
    for k in 0..4u64 {
        let mut m = model(0, false);
        let first = m.serve(read(0, 8), T0);
        let s = m.serve(read(200, 8), first.end + k * (rev / 4.0) as u64);
        waits.push(s.rotation_ns);
    }
    for k in 1..4 {
        let diff = (waits[0] - waits[k] - k as f64 * rev / 4.0).rem_euclid(rev);
        assert!(diff < 1e3 || rev - diff < 1e3, "waits {waits:?}");
    }
}

/// 4 KiB reads one after another, each issued `think_ns` after the one before completed.
fn sequential_rate(m: &mut Model, start: u64, count: u64, think_ns: u64) -> f64 {
    let mut t = T0;
    let first = t;
    for i in 0..count {
        let s = m.serve(read(start + i * 8, 8), t);
        t = s.end + think_ns;
    }
    (count * 8 * SECTOR_BYTES) as f64 / ((t - first) as f64 / 1e9)
}

#[test]
fn sequential_small_reads_run_at_the_media_rate_from_the_segment_buffer() {
    let mut with_ra = model(2048, false);
    let media = with_ra.drive.streaming_rate(0);
    let rate = sequential_rate(&mut with_ra, 0, 3000, 20_000);
    assert!(rate > 0.9 * media && rate < 1.02 * media, "read-ahead: {rate} B/s against media {media} B/s");
    // Without read-ahead each 4 KiB read finds its block just passed: about one turn each.
    let mut without = model(0, false);
    let slow = sequential_rate(&mut without, 0, 300, 20_000);
    let one_per_turn = 4096.0 / (m_rev() / 1e9);
    assert!(
        slow < 1.1 * one_per_turn && slow > 0.8 * one_per_turn,
        "no read-ahead: {slow} B/s, one per turn {one_per_turn}"
    );
}

#[test]
fn speculative_read_ahead_after_random_reads_is_not_busy_time() {
    // Random reads 10 ms apart: after each, the heads read ahead until the next request. That is
    // speculation, not work anyone waits for: the drive's busy time is the requests' own.
    let mut m = model(2048, false);
    let (mut t, first) = (T0, T0);
    let mut service = 0u64;
    for i in 0..200u64 {
        let s = m.serve(read((i * 7_919_993) % 9_000_000, 8), t);
        service += s.end - s.start;
        t = s.end + 10_000_000;
    }
    assert_eq!(m.busy_ns(), service);
    assert!((m.busy_ns() as f64) < 0.7 * (t - first) as f64);
}

#[test]
fn a_repeated_read_hits_the_buffer_and_a_distant_one_misses() {
    let mut m = model(2048, false);
    let a = m.serve(read(100_000, 8), T0);
    assert!(!a.hit);
    let b = m.serve(read(100_000, 8), a.end + 1_000_000);
    assert!(b.hit && b.seek_ns == 0.0 && b.rotation_ns == 0.0);
    // overhead 0 here, so a hit costs the interface transfer only: 4 KiB at 150 MB/s
    assert!(((b.end - b.start) as f64 - 4096.0 / 150e6 * 1e9).abs() < 10.0, "{:?}", b);
    let c = m.serve(read(2_000_000, 8), b.end);
    assert!(!c.hit && c.seek_ns > 0.0);
}

#[test]
fn write_cache_on_completes_writes_at_interface_speed_off_on_the_media() {
    let mut on = model(0, true);
    let s = on.serve(write(3_000_000, 8), T0);
    assert!(s.hit && (s.end - s.start) < 100_000, "cached write took {} ns", s.end - s.start);
    assert_eq!(on.dirty_sectors(), 8);
    let mut off = model(0, false);
    let s = off.serve(write(3_000_000, 8), T0);
    assert!(!s.hit && s.seek_ns > 1.0 * MS, "write-through {:?}", s);
    assert_eq!(off.dirty_sectors(), 0);
    // a write pays the extra settle after a seek
    let lbn = off.drive.geometry.first_lbn_of_cylinder(2000).unwrap();
    let back = off.serve(read(0, 8), s.end);
    let w = off.serve(write(lbn, 8), back.end);
    assert!((w.seek_ns - (off.drive.seek.ms(2000) + 0.5) * MS).abs() < 1.0, "{:?}", w);
}

#[test]
fn flush_writes_every_dirty_block_to_the_media() {
    let mut m = model(0, true);
    let mut t = T0;
    for i in 0..10u64 {
        let s = m.serve(write(i * 500_000, 16), t);
        t = s.end; // no idle time: nothing is destaged yet
    }
    assert_eq!(m.dirty_sectors(), 160);
    let f = m.serve(Request { op: Op::Flush, lbn: 0, sectors: 0 }, t);
    assert_eq!(m.dirty_sectors(), 0);
    // ten writes scattered over the disk: each needs a seek and a rotation, milliseconds each
    assert!(f.destage_ns > 10.0 * 2.0 * MS, "flush took {} ns", f.destage_ns);
    let again = m.serve(Request { op: Op::Flush, lbn: 0, sectors: 0 }, f.end);
    assert_eq!(again.end, again.start, "nothing left to flush");
}

#[test]
fn the_idle_drive_destages_and_a_full_cache_makes_writes_wait() {
    let mut m = model(0, true);
    let s = m.serve(write(1_000_000, 64), T0);
    // a second later the drive has long written it back: a flush finds nothing
    let f = m.serve(Request { op: Op::Flush, lbn: 0, sectors: 0 }, s.end + 1_000_000_000);
    assert_eq!(f.destage_ns, 0.0);
    assert_eq!(m.dirty_sectors(), 0);
    // back to back writes with no idle time fill the 8192-sector cache; the next one waits
    let mut t = f.end;
    let mut waited = 0.0;
    for i in 0..100u64 {
        let s = m.serve(write(i * 50_000, 256), t);
        waited += s.destage_ns;
        t = s.end;
    }
    assert!(waited > 0.0, "a full write cache must make writes wait");
    assert!(m.dirty_sectors() <= 8192);
}

#[test]
fn sequential_small_writes_into_the_cache_run_at_the_media_rate_not_one_per_turn() {
    // 4 KiB writes one after another, 20 us apart: the cache takes each while the actuator writes
    // back older ones, so the stream runs at the media's write rate (the cache fills, then each write
    // waits for room), not at one write per revolution (a destage under way would hold each write up).
    // The media's write rate: one long write-through from the same place (each track and cylinder
    // switch pays the write settle, so it is below the read rate).
    let mut through = model(0, false);
    let long = through.serve(write(0, 20_480), T0);
    let media = (20_480 * SECTOR_BYTES) as f64 / ((long.end - long.start) as f64 / 1e9);
    let mut m = model(0, true);
    let (mut t, first, count) = (T0, T0, 20_000u64);
    let mut waited = 0.0;
    for i in 0..count {
        let s = m.serve(write(i * 8, 8), t);
        waited += s.destage_ns;
        t = s.end + 20_000;
    }
    let rate = (count * 8 * SECTOR_BYTES) as f64 / ((t - first) as f64 / 1e9);
    assert!(rate > 0.9 * media && rate < 1.1 * media, "cached stream: {rate} B/s against media writes {media} B/s");
    assert!(waited > 0.0, "once the cache is full, writes wait for room");
    let one_per_turn = 4096.0 / (m_rev() / 1e9);
    assert!(rate > 5.0 * one_per_turn);
    // the drive was busy (taking writes, writing them back) nearly all the time (a little over: the
    // destage begun for the last write runs past it)
    let busy = m.busy_ns() as f64 / (t - first) as f64;
    assert!(busy > 0.9 && busy < 1.05, "busy share {busy}");
}

#[test]
fn a_cached_write_does_not_wait_for_a_destage_under_way_a_read_does() {
    let mut m = model(0, true);
    let w = m.serve(write(2_000_000, 8), T0);
    // 50 us later the idle drive has begun writing it back (milliseconds of seek and rotation)
    let w2 = m.serve(write(3_000_000, 8), w.end + 50_000);
    assert_eq!(w2.start, w.end + 50_000, "a cached write starts at once");
    assert!(w2.end - w2.start < 100_000, "{:?}", w2);
    let r = m.serve(read(6_000_000, 8), w2.end + 10_000);
    assert!(r.start > w2.end + 1_000_000, "the read waits for the destage: {:?}", r);
    // and the interface stays one at a time: two writes arriving together go one after the other
    let a = m.serve(write(100, 8), r.end + 10 * 1_000_000_000);
    let b = m.serve(write(200, 8), r.end + 10 * 1_000_000_000);
    assert_eq!(b.start, a.end);
}

#[test]
fn a_read_of_dirty_blocks_is_served_from_the_write_cache() {
    let mut m = model(0, true);
    let w = m.serve(write(4_000_000, 8), T0);
    let r = m.serve(read(4_000_000, 8), w.end);
    assert!(r.hit && r.seek_ns == 0.0);
}

#[test]
fn discard_costs_nothing_and_forgets_dirty_data() {
    let mut m = model(0, true);
    let w = m.serve(write(10_000, 64), T0);
    let d = m.serve(Request { op: Op::Discard, lbn: 10_000, sectors: 64 }, w.end);
    assert_eq!(d.end, d.start);
    assert_eq!(m.dirty_sectors(), 0);
}

#[test]
fn satf_picks_the_request_that_can_start_soonest_fifo_the_oldest() {
    let satf = Model::new(Drive::new(&spec(0, false, "satf", 8)).unwrap());
    let g = satf.drive.geometry.clone();
    let far = read(g.first_lbn_of_cylinder(9000).unwrap(), 8);
    let near = read(g.first_lbn_of_cylinder(3).unwrap(), 8);
    assert_eq!(satf.pick(&[far, near], T0), 1);
    let fifo = model(0, false);
    assert_eq!(fifo.pick(&[far, near], T0), 0);
    // a queue deeper than the drive's is not looked into past its depth
    let shallow = Model::new(Drive::new(&spec(0, false, "satf", 1)).unwrap());
    assert_eq!(shallow.pick(&[far, near], T0), 0);
}

#[test]
fn requests_are_served_one_at_a_time() {
    let mut m = model(0, false);
    // three requests arriving together: each starts when the one before ends
    let a = m.serve(read(0, 8), T0);
    let b = m.serve(read(4_000_000, 8), T0);
    let c = m.serve(read(8_000_000, 8), T0);
    assert_eq!(b.start, a.end);
    assert_eq!(c.start, b.end);
}

#[test]
fn bad_descriptions_name_the_field() {
    let bad = r#"{"name": "x", "rpm": 7200, "surfaces": 2, "zones": [], "seek": {"table": [[1, 1.0], [9, 2.0]]},
                 "bus_mb_s": 100, "cache": {"segments": 1, "segment_sectors": 8, "read_ahead_sectors": 8,
                 "write_cache": false, "write_cache_sectors": 0}}"#;
    let spec = DriveSpec::from_json(bad).unwrap();
    assert!(Drive::new(&spec).unwrap_err().0.starts_with("zones"));
    let unknown = bad.replace("\"rpm\"", "\"rpms\"");
    assert!(DriveSpec::from_json(&unknown).unwrap_err().0.contains("rpms"));
    let ra = bad.replace("\"read_ahead_sectors\": 8", "\"read_ahead_sectors\": 9");
    assert!(DriveSpec::from_json(&ra).unwrap_err().0.starts_with("cache.read_ahead_sectors"));
}

#[test]
fn a_reordering_queue_keeps_a_sequential_stream_at_the_media_rate_when_pieces_arrive_out_of_order() {
    // 256-sector pieces of a sequential stream reach an 8-deep SATF queue two at a time, the later
    // one first. A piece the read-ahead will reach is waited for, not served by aborting it.
    let mut m = Model::new(Drive::new(&spec(2048, false, "satf", 8)).unwrap());
    let media = m.drive.streaming_rate(0);
    let mut queue: Vec<Request> = vec![];
    let mut next = 0u64;
    let mut t = T0;
    let (mut served, total) = (0u64, 400u64);
    while served < total {
        while queue.len() < 8 && next < total {
            queue.push(read((next + 1) * 256, 256));
            queue.push(read(next * 256, 256));
            next += 2;
        }
        let i = m.pick(&queue, t);
        let r = queue.remove(i);
        let s = m.serve(r, t);
        t = s.end;
        served += 1;
    }
    let rate = (total * 256 * SECTOR_BYTES) as f64 / ((t - T0) as f64 / 1e9);
    assert!(rate > 0.9 * media, "{rate} B/s against media {media} B/s");
}

#[test]
fn the_media_time_of_a_sequential_stream_does_not_depend_on_the_host_pauses() {
    // 1 MiB reads in two 1024-sector pieces that arrive together, the host pausing between reads:
    // the service times plus the read-ahead done while waiting add up to the media's time, so the
    // rate over them is the media rate whatever the pauses (what calibration measures).
    let mut spec = spec(2048, false, "satf", 32);
    spec.cache.read_ahead_on_hit = true;
    for pause_us in [0u64, 100, 3_000, 20_000, 60_000] {
        let mut m = Model::new(Drive::new(&spec).unwrap());
        let media = m.drive.streaming_rate(0);
        let (mut t, mut busy) = (T0, 0.0);
        let reads = 40u64;
        for i in 0..reads {
            let a = m.serve(read(i * 2048, 1024), t);
            let b = m.serve(read(i * 2048 + 1024, 1024), t);
            busy += (a.end - a.start) as f64 + a.readahead_ns + (b.end - b.start) as f64 + b.readahead_ns;
            t = b.end + pause_us * 1000;
        }
        let rate = (reads * 2048 * SECTOR_BYTES) as f64 / (busy / 1e9);
        assert!((rate / media - 1.0).abs() < 0.05, "pause {pause_us} us: {rate} B/s against media {media}");
    }
}

#[test]
fn a_read_running_past_the_buffer_reads_only_the_rest_from_the_media() {
    let mut m = model(256, false);
    let a = m.serve(read(0, 64), T0);
    // a second later the read-ahead has long stopped at block 64 + 256; ask for 64..1064
    let b = m.serve(read(64, 1000), a.end + 1_000_000_000);
    assert!(!b.hit);
    // the media part is blocks 320..1064: 744 blocks, two and a bit tracks of 400, not 1000
    let sect = 60e9 / 7200.0 / 400.0;
    assert!(b.transfer_ns < 760.0 * sect && b.transfer_ns > 740.0 * sect, "{:?}", b);
}
