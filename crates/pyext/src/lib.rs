//! PyO3 glue, and nothing else: take the job (JSON validated by Python), release
//! the GIL, run the engine, hand the report back as JSON. Errors are mapped in
//! one place (`to_py`).

use std::sync::{Arc, Mutex};

use fsmeter_engine::{Control, EngineError, Session as EngineSession};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(_engine, JobError, PyValueError, "The job spec is wrong; the message starts with the field.");
create_exception!(_engine, IoFailure, PyOSError, "A system call failed while running the workload.");

fn to_py(e: EngineError) -> PyErr {
    match e {
        EngineError::InvalidJob { .. } | EngineError::UnknownPhase { .. } => JobError::new_err(e.to_string()),
        EngineError::Io { ref source, .. } => IoFailure::new_err((source.raw_os_error().unwrap_or(0), e.to_string())),
    }
}

/// One job, run a named phase at a time. `stop()` and `progress()` may be called
/// from another thread while `run_phase` runs.
#[pyclass(frozen, module = "fsmeter._engine")]
struct Session {
    inner: Mutex<EngineSession>,
    ctl: Arc<Control>,
}

#[pymethods]
impl Session {
    #[new]
    fn new(job_json: &str) -> PyResult<Self> {
        let inner = EngineSession::from_json(job_json).map_err(to_py)?;
        Ok(Session { inner: Mutex::new(inner), ctl: Arc::new(Control::new()) })
    }

    /// The workload's phases in their natural order.
    fn phases(&self) -> Vec<&'static str> {
        self.inner.lock().map(|s| s.phases().to_vec()).unwrap_or_default()
    }

    /// Run one phase with the GIL released; returns the report as JSON. With `hold_start`, the
    /// phase waits once its workers are ready, before its measured work starts, until
    /// `release_start()` (an MPI rank meets the others at a barrier there).
    #[pyo3(signature = (phase, hold_start=false))]
    fn run_phase(&self, py: Python<'_>, phase: &str, hold_start: bool) -> PyResult<String> {
        let ctl = Arc::clone(&self.ctl);
        if hold_start {
            ctl.arm_start_hold();
        }
        let out: Result<String, EngineError> = py.detach(|| {
            // A panic in an earlier phase poisons the lock; the session state is
            // still consistent between phases, so carry on with it.
            let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            s.run_phase(phase, &ctl).map(|r| serde_json::to_string(&r).expect("report serialises"))
        });
        ctl.disarm_start_hold();
        out.map_err(to_py)
    }

    /// True while a phase run with `hold_start` waits at its start, its workers ready.
    fn holding(&self) -> bool {
        self.ctl.holding()
    }

    /// Let a held phase start its measured work.
    fn release_start(&self) {
        self.ctl.release_start();
    }

    /// Ask the running phase to stop (it returns within about a second, marked interrupted).
    fn stop(&self) {
        self.ctl.request_stop();
    }

    /// Clear a stop request so another phase can run.
    fn reset_stop(&self) {
        self.ctl.reset();
    }

    fn stop_requested(&self) -> bool {
        self.ctl.stop_requested()
    }

    /// Progress of the running phase: state, elapsed_s, warmup_s, duration_s, ops, bytes, work_total.
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.ctl.progress();
        let d = PyDict::new(py);
        d.set_item("state", p.state)?;
        d.set_item("elapsed_s", p.elapsed_s)?;
        d.set_item("warmup_s", p.warmup_s)?;
        d.set_item("duration_s", p.duration_s)?;
        d.set_item("ops", p.ops)?;
        d.set_item("bytes", p.bytes)?;
        d.set_item("work_total", p.work_total)?;
        Ok(d)
    }
}

/// Read and check a job without starting it: what serde refuses (a count beyond its integer type, a
/// duration that is not a finite number) is found while the input is validated, not when a cell runs.
#[pyfunction]
fn check_job(job_json: &str) -> PyResult<()> {
    fsmeter_engine::Job::from_json(job_json).map(|_| ()).map_err(to_py)
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Session>()?;
    m.add_function(wrap_pyfunction!(check_job, m)?)?;
    m.add("JobError", m.py().get_type::<JobError>())?;
    m.add("IoFailure", m.py().get_type::<IoFailure>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
