//! The plan of a series: the roles it sends, in order, for each kind of series, and the
//! roles a shorter series keeps.
//!
//! Depends on: `model`, `spec`, `oracle` (which operations declare security).

use crate::model::StepRole;
use crate::spec::Api;

use super::{Access, Lifecycle};

/// The step a step of a life cycle judges the effect of, which a shorter series must keep
/// before it.
fn comes_after(role: StepRole) -> Option<StepRole> {
    Some(match role {
        StepRole::CreateAgain | StepRole::FollowLocation | StepRole::CreateDuplicate => {
            StepRole::Create
        }
        StepRole::ListAfterFailedCreate => StepRole::FailedCreate,
        StepRole::ReadAfterFailedUpdate => StepRole::FailedUpdate,
        StepRole::ReadAfterUpdate | StepRole::UpdateAgain => StepRole::Update,
        StepRole::ReadAfterUpdateAgain => StepRole::UpdateAgain,
        StepRole::ReadAfterPatch => StepRole::Patch,
        StepRole::ReadAfterDelete | StepRole::DeleteAgain => StepRole::Delete,
        // A change of a deleted resource tells something only once a read showed it gone.
        StepRole::UpdateAfterDelete => StepRole::ReadAfterDelete,
        StepRole::ReadAfterUpdateAfterDelete => StepRole::UpdateAfterDelete,
        StepRole::ReadAfterUpdateReadOnly => StepRole::UpdateReadOnly,
        StepRole::ReadAfterAction | StepRole::ActionAgain => StepRole::Action,
        StepRole::ReadAfterActionAgain => StepRole::ActionAgain,
        _ => return None,
    })
}

/// The roles of a life cycle series of `lifecycle`, started by a creation (a `PUT` when
/// `creating_put`): create, read, then each change the document allows and the read that
/// shows it, an action under the item (`action`: whether it is a PUT, sent twice), the
/// deletion last.
pub(super) fn lifecycle_roles(
    lifecycle: &Lifecycle,
    creating_put: bool,
    action: Option<bool>,
) -> Vec<StepRole> {
    let mut roles = vec![StepRole::Create];
    if creating_put {
        roles.push(StepRole::CreateAgain);
    }
    roles.extend([StepRole::FollowLocation, StepRole::Read]);
    if lifecycle.duplicate && !creating_put {
        roles.push(StepRole::CreateDuplicate);
    }
    if lifecycle.started == 1 {
        roles.push(StepRole::Options);
    }
    if lifecycle.post.is_some() && lifecycle.list.is_some() {
        roles.extend([StepRole::FailedCreate, StepRole::ListAfterFailedCreate]);
    }
    if lifecycle.put.is_some() || lifecycle.patch.is_some() {
        roles.extend([StepRole::FailedUpdate, StepRole::ReadAfterFailedUpdate]);
    }
    if lifecycle.put.is_some() {
        roles.extend([
            StepRole::Update,
            StepRole::ReadAfterUpdate,
            StepRole::UpdateAgain,
            StepRole::ReadAfterUpdateAgain,
        ]);
    }
    if lifecycle.patch.is_some() {
        roles.extend([StepRole::Patch, StepRole::ReadAfterPatch]);
    }
    if lifecycle.read_only_settable {
        roles.extend([StepRole::UpdateReadOnly, StepRole::ReadAfterUpdateReadOnly]);
    }
    if let Some(put) = action {
        roles.extend([StepRole::Action, StepRole::ReadAfterAction]);
        if put {
            roles.extend([StepRole::ActionAgain, StepRole::ReadAfterActionAgain]);
        }
    }
    if lifecycle.delete.is_some() {
        roles.extend([
            StepRole::Delete,
            StepRole::ReadAfterDelete,
            StepRole::DeleteAgain,
        ]);
        if lifecycle.patch.is_some() || lifecycle.put.is_some() {
            roles.extend([
                StepRole::UpdateAfterDelete,
                StepRole::ReadAfterUpdateAfterDelete,
            ]);
        }
    }
    roles
}

/// The roles of the access series of life cycle `l`: none when there is no other identity
/// and nothing to withhold, or nothing to ask.
pub(super) fn access_roles(api: &Api, l: &Lifecycle, access: &Access) -> Vec<StepRole> {
    let other = access.other.is_some();
    let update = l.put.or(l.patch);
    let protected = |op: usize| {
        api.operations
            .get(op)
            .is_some_and(|o| crate::oracle::declares_security(api, o))
    };
    let mut roles = vec![StepRole::Create, StepRole::Read];
    if other {
        roles.push(StepRole::ReadAsOther);
    }
    if access.anonymous && update.is_some_and(protected) {
        roles.extend([
            StepRole::UpdateAnonymous,
            StepRole::ReadAfterUpdateAnonymous,
        ]);
    }
    if other && update.is_some() {
        roles.extend([StepRole::UpdateAsOther, StepRole::ReadAfterUpdateAsOther]);
    }
    if other && l.delete.is_some() {
        roles.extend([
            StepRole::DeleteAsOther,
            StepRole::ReadAfterDeleteAsOther,
            StepRole::Delete,
            StepRole::ReadDeletedAsOther,
        ]);
    }
    if roles.len() == 2 {
        return Vec::new();
    }
    roles
}

/// Of the roles an ended life cycle sent (`sent`, in order), those a shorter series keeps:
/// the ones a series oracle `needs`, the step its finding is at (`at`) and the read that
/// shows it, the steps those come after, and the creation.
pub(super) fn shorter_roles(sent: &[StepRole], needs: &[StepRole], at: StepRole) -> Vec<StepRole> {
    let mut wanted: Vec<StepRole> = needs
        .iter()
        .copied()
        .chain([StepRole::Create, at])
        .collect();
    let mut i = 0;
    while i < wanted.len() {
        if let Some(before) = comes_after(wanted[i]) {
            if !wanted.contains(&before) {
                wanted.push(before);
            }
        }
        i += 1;
    }
    // The read that shows what the finding's step did.
    let shows = |r: &StepRole| {
        comes_after(*r) == Some(at)
            && (r.as_str().starts_with("read_after") || r.as_str().starts_with("list_after"))
    };
    sent.iter()
        .copied()
        .filter(|r| wanted.contains(r) || shows(r))
        .collect()
}
