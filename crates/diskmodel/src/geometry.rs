//! Zoned geometry: where a logical block lies (cylinder, surface, sector) and at which angle.
//!
//! The map is DiskSim's layout "g1" mapping scheme 0: logical blocks fill a track, then the next
//! surface of the same cylinder, then the next cylinder; zones follow each other outward in.
//! Each track's first block is shifted by the skews accumulated since the zone's first track (a
//! head switch adds `track_skew` sectors, a cylinder switch `cylinder_skew`), and physical sector 0
//! of every track begins at the same angle. Spare sectors, slipped and remapped defects are not
//! modelled: the zones hold as many blocks as their tracks have sectors, and the drive's capacity
//! takes the first of them.

use crate::spec::{bad, DriveSpec, SpecError};

pub const SECTOR_BYTES: u64 = 512;

#[derive(Debug, Clone)]
pub struct Zone {
    pub first_cylinder: u32,
    pub last_cylinder: u32,
    pub spt: u32,
    pub track_skew: u32,
    pub cylinder_skew: u32,
    /// The zone's first logical block.
    pub first_lbn: u64,
    /// Logical blocks in the zone (cylinders x surfaces x sectors per track).
    pub lbns: u64,
}

/// A track: its cylinder and surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Track {
    pub cylinder: u32,
    pub surface: u32,
}

/// Where a logical block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub zone: usize,
    pub track: Track,
    /// Logical index of the block on its track (0 = the track's first block).
    pub index: u32,
}

#[derive(Debug, Clone)]
pub struct Geometry {
    pub surfaces: u32,
    pub zones: Vec<Zone>,
    /// Cylinders from 0 to the last zone's last cylinder (gaps between zones included).
    pub cylinders: u32,
    /// Logical blocks the drive offers.
    pub capacity: u64,
}

impl Geometry {
    pub fn new(spec: &DriveSpec) -> Result<Geometry, SpecError> {
        if spec.zones.is_empty() {
            return bad("zones: at least one zone is needed");
        }
        let mut zones = Vec::with_capacity(spec.zones.len());
        let mut lbn = 0u64;
        let mut next_free = 0u32;
        for (i, z) in spec.zones.iter().enumerate() {
            let name = format!("zones[{i}]");
            if z.last_cylinder < z.first_cylinder {
                return bad(format!(
                    "{name}: last_cylinder {} is before first_cylinder {}",
                    z.last_cylinder, z.first_cylinder
                ));
            }
            if i > 0 && z.first_cylinder < next_free {
                return bad(format!(
                    "{name}: first_cylinder {} overlaps the zone before (zones go outward in, cylinder numbers growing)",
                    z.first_cylinder
                ));
            }
            if !(1..=100_000).contains(&z.sectors_per_track) {
                return bad(format!("{name}.sectors_per_track: {} is not between 1 and 100000", z.sectors_per_track));
            }
            if z.track_skew >= z.sectors_per_track || z.cylinder_skew >= z.sectors_per_track {
                return bad(format!(
                    "{name}: a skew must be less than the sectors of a track ({})",
                    z.sectors_per_track
                ));
            }
            let cyls = (z.last_cylinder - z.first_cylinder + 1) as u64;
            let lbns = cyls * spec.surfaces as u64 * z.sectors_per_track as u64;
            zones.push(Zone {
                first_cylinder: z.first_cylinder,
                last_cylinder: z.last_cylinder,
                spt: z.sectors_per_track,
                track_skew: z.track_skew,
                cylinder_skew: z.cylinder_skew,
                first_lbn: lbn,
                lbns,
            });
            lbn += lbns;
            next_free = z.last_cylinder + 1;
        }
        let capacity = match spec.capacity_sectors {
            None => lbn,
            Some(0) => return bad("capacity_sectors: 0 is no capacity"),
            Some(c) if c > lbn => {
                return bad(format!("capacity_sectors: {c} is more than the zones hold ({lbn} sectors)"));
            }
            Some(c) => c,
        };
        // The zones holding no block of the capacity are dropped (their cylinders still count for seeks).
        let cylinders = next_free;
        zones.retain(|z| z.first_lbn < capacity);
        Ok(Geometry { surfaces: spec.surfaces, zones, cylinders, capacity })
    }

    pub fn zone_of(&self, lbn: u64) -> usize {
        // Few zones (tens): a binary search over first_lbn.
        match self.zones.binary_search_by(|z| z.first_lbn.cmp(&lbn)) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    pub fn place(&self, lbn: u64) -> Place {
        let zi = self.zone_of(lbn);
        let z = &self.zones[zi];
        let off = lbn - z.first_lbn;
        let per_cyl = self.surfaces as u64 * z.spt as u64;
        let cylinder = z.first_cylinder + (off / per_cyl) as u32;
        let rem = off % per_cyl;
        Place {
            zone: zi,
            track: Track { cylinder, surface: (rem / z.spt as u64) as u32 },
            index: (rem % z.spt as u64) as u32,
        }
    }

    /// The angle (fraction of a revolution from physical sector 0) at which `place`'s block begins.
    pub fn angle(&self, place: &Place) -> f64 {
        let z = &self.zones[place.zone];
        let spt = z.spt as u64;
        let cyl_in_zone = (place.track.cylinder - z.first_cylinder) as u64;
        let per_cyl_skew = (self.surfaces as u64 - 1) * z.track_skew as u64 + z.cylinder_skew as u64;
        let skew = (cyl_in_zone * per_cyl_skew + place.track.surface as u64 * z.track_skew as u64) % spt;
        ((place.index as u64 + skew) % spt) as f64 / spt as f64
    }

    /// Sectors left on `lbn`'s track from `lbn` on (inclusive).
    pub fn left_on_track(&self, place: &Place) -> u32 {
        self.zones[place.zone].spt - place.index
    }

    /// The first logical block of a cylinder (None when the cylinder holds no block of the capacity).
    pub fn first_lbn_of_cylinder(&self, cylinder: u32) -> Option<u64> {
        let z = self.zones.iter().find(|z| (z.first_cylinder..=z.last_cylinder).contains(&cylinder))?;
        let lbn = z.first_lbn + (cylinder - z.first_cylinder) as u64 * self.surfaces as u64 * z.spt as u64;
        (lbn < self.capacity).then_some(lbn)
    }

    /// The cylinders that hold blocks of the capacity: (first, last).
    pub fn data_cylinders(&self) -> (u32, u32) {
        let last = self.place(self.capacity - 1).track.cylinder;
        (self.zones[0].first_cylinder, last)
    }
}
