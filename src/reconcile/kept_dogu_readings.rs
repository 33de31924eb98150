//! The Dogu CRs' readings (`blueprint_machine::DoguReadings`) kept from one reconcile to the next: a
//! reconcile reads again only the Dogu CRs the cache replaced since the last one. The Dogu CRs are
//! the namespace's, whichever Blueprint is reconciled, so one set serves every reconcile; two
//! reconciles at once each take what is kept (the second finds nothing and reads every object), and the
//! one that finishes last keeps its own: any readings are right, kept ones only save work.

use std::sync::{Arc, Mutex};

use blueprint_machine::DoguReadings;
use blueprint_machine::api::Dogu;

#[derive(Default)]
pub struct KeptDoguReadings {
    kept: Mutex<DoguReadings>,
}

impl KeptDoguReadings {
    /// The readings of `dogus`, from what is kept: taken, to be given back with [`Self::keep`].
    pub fn read(&self, dogus: &[Arc<Dogu>]) -> DoguReadings {
        let kept = std::mem::take(&mut *self.kept.lock().expect("not poisoned"));
        // Read outside the lock: nothing else waits for it.
        DoguReadings::of(dogus, kept)
    }

    /// Keeps `readings` for the next reconcile.
    pub fn keep(&self, readings: DoguReadings) {
        *self.kept.lock().expect("not poisoned") = readings;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_kept_serves_the_next_reconcile_and_is_taken_meanwhile() {
        let kept = KeptDoguReadings::default();
        let dogus = vec![Arc::new(blueprint_machine::fixtures::dogu_cr("official/cas", "7.0.8-1"))];
        let readings = kept.read(&dogus);
        assert!(readings.is_of(&dogus));
        kept.keep(readings);
        // While one reconcile holds them, another finds nothing kept and reads for itself.
        let first = kept.read(&dogus);
        assert!(first.is_of(&dogus));
        assert!(kept.kept.lock().unwrap().is_of(&[]), "taken, not shared");
        kept.keep(first);
        assert!(kept.kept.lock().unwrap().is_of(&dogus));
    }
}
