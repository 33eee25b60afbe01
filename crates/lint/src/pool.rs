//! Lint's thread pool: files linted on N threads, handed to the printer in
//! report order as soon as each file and every one before it are done.
//!
//! Hand-written rather than rayon (see the README's "Dependencies, and
//! why"): rayon's parallel iterators keep order only by collecting every
//! result, so memory would grow with the corpus; here at most a window of
//! 4 × threads results is ever held, the threads have the parser's stack
//! ([`manifest::PARSE_STACK_BYTES`]), and a panicking worker stops the
//! others.

use infera_model::manifest;

/// `--threads 0`: `RAYON_NUM_THREADS` when set, else one per CPU (the
/// default rayon-based tools have; infera's pool is [`drive`], not rayon's:
/// see the README's "Dependencies, and why").
pub(crate) fn thread_count(threads: usize) -> usize {
    if threads > 0 {
        return threads;
    }
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Run `work` over `units` on `threads` threads (each with a parser-sized
/// stack) and hand the results to `each`, on the calling thread, in order.
/// Workers stay at most a few units ahead of the one handed over (a reorder
/// window), so only that many results are ever held.
pub(crate) fn drive<U: Sync, T: Send>(
    units: &[U],
    threads: usize,
    work: &(dyn Fn(&U) -> T + Sync),
    each: &mut dyn FnMut(T) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let threads = threads.max(1);
    let window = 4 * threads;
    let gate = Gate::default();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, T)>();
        let mut started = 0;
        let mut spawn_error = None;
        for _ in 0..threads {
            let tx = tx.clone();
            let gate = &gate;
            let spawned = std::thread::Builder::new()
                .stack_size(manifest::PARSE_STACK_BYTES)
                .spawn_scoped(s, move || {
                    // A worker that panics stops the others (its unit would
                    // never be handed over); the scope re-raises the panic.
                    let _stop_on_panic = StopOnPanic(gate);
                    while let Some(i) = gate.take(units.len(), window) {
                        if tx.send((i, work(&units[i]))).is_err() {
                            break;
                        }
                    }
                });
            match spawned {
                Ok(_) => started += 1,
                Err(e) => spawn_error = Some(e),
            }
        }
        drop(tx);
        if started == 0 {
            return Err(spawn_error.unwrap_or_else(|| std::io::Error::other("no thread")));
        }
        let mut pending = std::collections::BTreeMap::new();
        let mut result = Ok(());
        let mut next = 0;
        for (i, r) in rx {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&next) {
                if result.is_ok() {
                    result = each(r);
                }
                next += 1;
                gate.handed_over(next, result.is_err());
            }
        }
        result
    })
}

/// The reorder window of [`drive`]: which unit is next to take, and how far
/// the hand-over has got.
#[derive(Default)]
struct Gate {
    state: std::sync::Mutex<GateState>,
    moved: std::sync::Condvar,
}

#[derive(Default)]
struct GateState {
    next: usize,
    handed_over: usize,
    stop: bool,
    /// Workers waiting for the window to move: the hand-over wakes them
    /// only when there are some (a wake is a futex syscall, once per file
    /// otherwise, and lint with one worker mostly has none waiting).
    waiting: usize,
}

impl Gate {
    /// The next unit to work on, waiting while it is `window` units or
    /// more ahead of the hand-over; None when all are taken or on stop.
    fn take(&self, len: usize, window: usize) -> Option<usize> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !g.stop && g.next < len && g.next >= g.handed_over + window {
            g.waiting += 1;
            g = self.moved.wait(g).unwrap_or_else(|e| e.into_inner());
            g.waiting -= 1;
        }
        if g.stop || g.next >= len {
            return None;
        }
        g.next += 1;
        Some(g.next - 1)
    }

    fn handed_over(&self, count: usize, stop: bool) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.handed_over = count;
        g.stop |= stop;
        if g.waiting > 0 {
            self.moved.notify_all();
        }
    }
}

/// Stops the [`Gate`] when dropped by a panicking thread.
struct StopOnPanic<'a>(&'a Gate);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut g = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
            g.stop = true;
            self.0.moved.notify_all();
        }
    }
}
