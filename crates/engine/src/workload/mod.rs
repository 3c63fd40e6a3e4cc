//! Workload families, one folder each, and the registry that names them.
//!
//! Each family implements `family::Workload` and provides a spec type
//! (deserialised from the job's `workload` object) and a constructor
//! `new(&Settings, spec) -> Result<Self>`. A family is its folder, its `mod`
//! line below, and one line of the `families!` list, which adds its variant to
//! `WorkloadSpec` (its `family` name in JSON is the variant in snake_case) and
//! its arm to `WorkloadSpec::build`. The modules are plain `mod` items so that
//! rustfmt and other tools find every family's files.
//! Families import nothing from this file, only what stands below it
//! (`family`, settings, measure, verify, backend, sys).

pub mod access;
pub mod bonnie;
pub mod crash;
pub mod family;
pub mod fileset;
pub mod io500;
pub mod iozone;
pub mod macro_tools;
pub mod mix;
pub mod replay;
pub mod tree;

use serde::Deserialize;

use crate::error::Result;
use crate::settings::Settings;
use family::Workload;

macro_rules! families {
    ($($variant:ident($spec:ty) => $workload:ty,)*) => {
        /// One variant per workload family; `family` in JSON selects it.
        // Variants differ in size (the access spec is the largest): a job holds one, made once.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, Deserialize)]
        #[serde(tag = "family", rename_all = "snake_case")]
        pub enum WorkloadSpec {
            $($variant($spec),)*
        }

        impl WorkloadSpec {
            /// The family's workload for this spec (which it checks against `settings`).
            pub fn build(&self, settings: &Settings) -> Result<Box<dyn Workload>> {
                Ok(match self {
                    $(WorkloadSpec::$variant(spec) => Box::new(<$workload>::new(settings, spec.clone())?),)*
                })
            }
        }
    };
}

// JSON family (spec type) => workload type; access_group is made of access jobs (access/group.rs)
families! {
    Access(access::AccessSpec) => access::Access,
    AccessGroup(access::AccessGroupSpec) => access::AccessGroup,
    Replay(replay::ReplaySpec) => replay::Replay,
    Fileset(fileset::FilesetSpec) => fileset::Fileset,
    Tree(tree::TreeSpec) => tree::Tree,
    Iozone(iozone::IozoneSpec) => iozone::Iozone,
    Mix(mix::MixSpec) => mix::Mix,
    Bonnie(bonnie::BonnieSpec) => bonnie::Bonnie,
    Macro(macro_tools::MacroSpec) => macro_tools::MacroTools,
    Crash(crash::CrashSpec) => crash::Crash,
    Io500(io500::Io500Spec) => io500::Io500,
}
