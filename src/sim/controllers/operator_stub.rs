//! Placeholder for the infera operator controller: it reconciles through
//! `crate::operator::render`, which has not landed in main yet; until then
//! InferaDeployments are stored but not turned into Deployments.

use super::Manager;
use super::cache::Key;

impl Manager {
    pub(super) fn sync_idep(&mut self, _key: &Key) {}
}
