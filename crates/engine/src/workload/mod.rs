//! Workload families, one folder each, and the registry that names them.
//!
//! Each family implements `family::Workload` and provides a spec type
//! (deserialised from the job's `workload` object) and a constructor
//! `new(&Settings, spec) -> Result<Self>`. The one `families!` list below
//! declares each family's module, adds its variant to `WorkloadSpec` (its
//! `family` name in JSON is the variant in snake_case) and its arm to
//! `WorkloadSpec::build`: adding a family is its folder plus one line here.
//! Families import nothing from this file, only what stands below it
//! (`family`, settings, measure, verify, backend, sys).

pub mod family;

use serde::Deserialize;

use crate::error::Result;
use crate::settings::Settings;
use family::Workload;

macro_rules! families {
    ($($module:ident: $variant:ident($spec:ident) => $workload:ident,)*) => {
        $(pub mod $module;)*

        /// One variant per workload family; `family` in JSON selects it.
        // Variants differ in size (the access spec is the largest): a job holds one, made once.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, Deserialize)]
        #[serde(tag = "family", rename_all = "snake_case")]
        pub enum WorkloadSpec {
            $($variant($module::$spec),)*
        }

        impl WorkloadSpec {
            /// The family's workload for this spec (which it checks against `settings`).
            pub fn build(&self, settings: &Settings) -> Result<Box<dyn Workload>> {
                Ok(match self {
                    $(WorkloadSpec::$variant(spec) => Box::new($module::$workload::new(settings, spec.clone())?),)*
                })
            }
        }
    };
}

// module: JSON family (spec type) => workload type
families! {
    access: Access(AccessSpec) => Access,
    access_group: AccessGroup(AccessGroupSpec) => AccessGroup,
    replay: Replay(ReplaySpec) => Replay,
    fileset: Fileset(FilesetSpec) => Fileset,
    tree: Tree(TreeSpec) => Tree,
    iozone: Iozone(IozoneSpec) => Iozone,
    mix: Mix(MixSpec) => Mix,
    bonnie: Bonnie(BonnieSpec) => Bonnie,
    macro_tools: Macro(MacroSpec) => MacroTools,
    crash: Crash(CrashSpec) => Crash,
    io500: Io500(Io500Spec) => Io500,
}
