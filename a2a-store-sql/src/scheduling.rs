//! How the kernel schedules the SQLite writer's threads (Linux).
//!
//! The writer commits whatever writes are waiting when it wakes. Woken as a
//! normal thread, it preempts the async worker that just queued a write, so
//! on a busy core it commits a handful at a time while the worker still
//! holds more: each commit's fixed cost (the log frames of the pages every
//! task touches, the commit itself) is paid for few writes. As a batch
//! thread it waits for the worker's turn to end, by which time the worker
//! has queued what it held, and commits the lot. On an idle or a many-core
//! machine nothing is waiting to run, so it starts at once as before.
//!
//! The checkpointer keeps the normal policy: as an idle-class thread it
//! hardly ran on a saturated core, the log grew to 3 GB in 30 s of load,
//! and the writes slowed below the normal policy's.

/// Puts the calling thread under `SCHED_BATCH` (never preempting a running
/// thread when woken), keeping its nice value. A failure (a platform or
/// sandbox that refuses it) leaves the thread as it was: only its
/// throughput depends on it.
pub(crate) fn run_calling_thread_as_batch() {
    if let Err(err) = apply_batch() {
        tracing::debug!(error = %err, "the thread keeps its scheduling policy");
    }
}

#[cfg(target_os = "linux")]
fn apply_batch() -> Result<(), String> {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
        thread_native_id,
    };
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    let policy = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch);
    // For normal policies the crate also sets the nice value, from a scale
    // of its own: the point of that scale that is the thread's nice value,
    // so that only the policy changes.
    let nice = rustix::process::getpriority_process(None).map_err(|e| e.to_string())?;
    let priority = (u8::from(ThreadPriorityValue::MIN)..=u8::from(ThreadPriorityValue::MAX))
        .filter_map(|value| ThreadPriorityValue::try_from(value).ok())
        .map(ThreadPriority::Crossplatform)
        .find(|priority| priority.to_posix(policy).ok() == Some(nice))
        .ok_or_else(|| format!("no priority keeps the nice value {nice}"))?;
    set_thread_priority_and_policy(thread_native_id(), priority, policy).map_err(|e| e.to_string())
}

#[cfg(not(target_os = "linux"))]
fn apply_batch() -> Result<(), String> {
    Err("scheduling policies are set on Linux only".into())
}

#[cfg(all(test, target_os = "linux"))]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A thread's policy as the kernel reports it in the thread's `stat`
    /// file (`/proc/self/task/[tid]/stat`, field 41; `SCHED_BATCH` is 3).
    pub(crate) fn policy_in(stat: &str) -> u32 {
        let stat = std::fs::read_to_string(stat).unwrap();
        // Fields after the command (which may hold spaces), from field 3.
        let after_command = &stat[stat.rfind(')').unwrap() + 1..];
        after_command
            .split_whitespace()
            .nth(41 - 3)
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Only the policy changes: a thread that was niced stays as nice.
    #[test]
    fn a_batch_thread_keeps_its_nice_value() {
        std::thread::spawn(|| {
            rustix::process::setpriority_process(None, 7).unwrap();
            run_calling_thread_as_batch();
            assert_eq!(policy_in("/proc/thread-self/stat"), 3);
            assert_eq!(rustix::process::getpriority_process(None).unwrap(), 7);
        })
        .join()
        .unwrap();
    }
}
