//! One task of the mix family, as its own small process: the engine forks
//! and execs this program once per task, so a task is not a copy of
//! fsmeter's (large, multi-threaded) process and its fork and exec jobs cost
//! what they cost in AIM7. Not meant to be run by hand: its single argument
//! is the task's JSON description written by the engine.

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    match fsmeter_engine::workload::mix::driver::helper_main(&arg) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("fsmeter-mix-task: {e}");
            std::process::exit(125);
        }
    }
}
