//! The world's kubelet reports container events over the API, as a kubelet
//! does (core/v1 Events, `source.component: kubelet`, `source.host: NODE`),
//! so it works against the embedded API server and the real one alike.
//! Reasons and wording are k8s.io/kubernetes@v1.37.2's:
//! pkg/kubelet/events/event.go (reasons), pkg/kubelet/images/image_manager.go
//! (Pulling/Pulled), pkg/kubelet/kuberuntime/kuberuntime_container.go
//! (Created/Started/Killing), pkg/kubelet/prober/prober.go (Unhealthy).
//! Posting is fire-and-forget: a lost event never holds up the pod. As
//! client-go's recorder does (k8s.io/client-go tools/record/event.go:
//! `maxQueuedEvents = 1000`, a broadcaster that drops on a full queue), at
//! most [`MAX_QUEUED_EVENTS`] posts are outstanding in a process and the
//! next is dropped, so a starved or unreachable API server costs events,
//! never memory without bound.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Posts outstanding at once, in this process (client-go's queue length).
const MAX_QUEUED_EVENTS: usize = 1000;

/// Events posted and not yet answered, in this process.
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);

/// One outstanding post: taken only while fewer than
/// [`MAX_QUEUED_EVENTS`] are, given back when dropped.
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        OUTSTANDING
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_QUEUED_EVENTS).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        OUTSTANDING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The pod (and container) an event is about.
pub(super) struct Subject {
    pub client: kube::Client,
    pub ns: String,
    pub pod: String,
    pub uid: String,
    pub node: String,
}

impl Subject {
    /// Post one event about `container` (its `fieldPath`), in the background.
    pub(super) fn post(&self, container: &str, type_: &str, reason: &str, message: String) {
        let Some(slot) = Slot::take() else {
            return;
        };
        let now = Time(infera_sim_core::clock::server_now());
        let suffix = format!("{:x}", infera_sim_core::clock::server_now().as_nanosecond());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{suffix}", self.pod)),
                namespace: Some(self.ns.clone()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: Some(self.ns.clone()),
                name: Some(self.pod.clone()),
                uid: Some(self.uid.clone()),
                field_path: (!container.is_empty())
                    .then(|| format!("spec.containers{{{container}}}")),
                ..ObjectReference::default()
            },
            reason: Some(reason.into()),
            message: Some(message),
            type_: Some(type_.into()),
            source: Some(EventSource {
                component: Some("kubelet".into()),
                host: Some(self.node.clone()),
            }),
            reporting_component: Some("kubelet".into()),
            reporting_instance: Some(self.node.clone()),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.ns);
        tokio::spawn(async move {
            let _ = api.create(&PostParams::default(), &event).await;
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots run out at the queue length and come back when dropped.
    #[test]
    fn at_most_max_queued_events_are_outstanding() {
        let slots: Vec<Slot> = std::iter::from_fn(Slot::take)
            .take(MAX_QUEUED_EVENTS + 5)
            .collect();
        assert_eq!(slots.len(), MAX_QUEUED_EVENTS);
        assert!(Slot::take().is_none());
        drop(slots);
        assert!(Slot::take().is_some());
    }
}
