//! The one table of business commands: each command's stable name, its family and the type of the facts the
//! host gathers for the rules. The `/v1/im` route table, the service's dispatch and the plugins' `match` all
//! name commands through [`CommandName`], and the facts travel as [`Facts`], so that a command or a fact
//! renamed on one side no longer compiles on the other.
//!
//! A new command is one line in [`commands!`] below (and, if a client reaches it, one route in
//! `palaver-gateway/src/im/routes.rs`).

use crate::facts::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The rules' input as [`Facts::rule_input`] writes it.
#[derive(Serialize)]
struct RuleInput<'a, F> {
    args: &'a Value,
    facts: &'a F,
}

/// Who runs a family of commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `friend.*` and `block.*`: the friends plugin holds the rules.
    Friends,
    /// `group.*`: the governance plugin holds the rules.
    Groups,
    /// `notification.*`: the host's own, asking no rules.
    Notifications,
    /// `report.*`: abuse reports, the host's own, asking no rules.
    Reports,
}

impl Family {
    /// Whether the tenant's rules (plugins) decide this family's commands; the host's own families ask none, and
    /// are never off.
    pub const fn asks_rules(self) -> bool {
        !matches!(self, Family::Notifications | Family::Reports)
    }
}

/// Declares [`CommandName`] and [`Facts`]: `Variant = "name", Family, FactsType;`.
macro_rules! commands {
    ($( $(#[$meta:meta])* $variant:ident = $name:literal, $family:ident, $facts:ident; )*) => {
        /// A business command.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum CommandName {
            $( #[doc = concat!("`", $name, "`")] $(#[$meta])* $variant, )*
        }

        impl CommandName {
            /// Every command, in table order.
            pub const ALL: &'static [CommandName] = &[$( CommandName::$variant, )*];

            /// The stable dotted name (`friend.request.create`), as plugins' manifests list it.
            pub const fn name(self) -> &'static str {
                match self { $( CommandName::$variant => $name, )* }
            }

            /// Who runs it.
            pub const fn family(self) -> Family {
                match self { $( CommandName::$variant => Family::$family, )* }
            }
        }

        /// The facts the host gathered for one command, typed per command. They travel as the `facts` member
        /// of the rules' input (`{"args": …, "facts": …}`).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Facts {
            $( #[doc = concat!("The facts of `", $name, "`.")] $variant($facts), )*
        }

        impl Facts {
            /// The command these facts are for.
            pub const fn command(&self) -> CommandName {
                match self { $( Facts::$variant(_) => CommandName::$variant, )* }
            }

            /// Reads the facts of `command`: every fact its type names must be there with the right type, and
            /// no other (a fact renamed on one side is an error, never a silent default).
            pub fn parse(command: CommandName, facts: &Value) -> Result<Facts, FactsError> {
                let bad = |e: serde_json::Error| FactsError { command, why: e.to_string() };
                Ok(match command { $( CommandName::$variant => Facts::$variant($facts::deserialize(facts).map_err(bad)?), )* })
            }

            /// Reads the facts of `command` as [`Facts::parse`] does, for a command of `family` only; another
            /// family's command is an error. Called with a constant family (a plugin reads only its own), the
            /// other families' deserializers fold away once this is inlined, which keeps a guest small: every
            /// arm's guard is then a constant.
            #[inline(always)]
            pub fn parse_in(family: Family, command: CommandName, facts: &Value) -> Result<Facts, FactsError> {
                let bad = |e: serde_json::Error| FactsError { command, why: e.to_string() };
                Ok(match command {
                    $( CommandName::$variant if family as u8 == Family::$family as u8 =>
                        Facts::$variant($facts::deserialize(facts).map_err(bad)?), )*
                    other => return Err(FactsError { command, why: format!("{other} is not a command of {family:?}") }),
                })
            }

            /// The facts as JSON.
            pub fn to_value(&self) -> Value {
                let v = match self { $( Facts::$variant(f) => serde_json::to_value(f), )* };
                // Plain structs of strings, numbers and booleans always serialize.
                v.unwrap_or(Value::Null)
            }

            /// The rules' whole input, `{"args": …, "facts": …}`, as the JSON text a plugin receives: written
            /// once, straight from the typed facts, with no `Value` built on the way.
            pub fn rule_input(&self, args: &Value) -> String {
                let text = match self { $( Facts::$variant(facts) => serde_json::to_string(&RuleInput { args, facts }), )* };
                // Plain structs of strings, numbers and booleans, and a `Value`, always serialize.
                text.unwrap_or_default()
            }
        }
    };
}

commands! {
    FriendRequestCreate = "friend.request.create", Friends, FriendRequestFacts;
    FriendRequestList = "friend.request.list", Friends, RequestListFacts;
    FriendRequestAccept = "friend.request.accept", Friends, RequestFacts;
    FriendRequestReject = "friend.request.reject", Friends, RequestFacts;
    FriendRequestCancel = "friend.request.cancel", Friends, RequestFacts;
    FriendList = "friend.list", Friends, NoFacts;
    FriendDelete = "friend.delete", Friends, UserFacts;
    FriendRemark = "friend.remark", Friends, RemarkFacts;
    /// Asked before P2P messages, never routed.
    FriendP2pSend = "friend.p2p.send", Friends, P2pSendFacts;
    BlockCreate = "block.create", Friends, UserFacts;
    BlockList = "block.list", Friends, NoFacts;
    BlockDelete = "block.delete", Friends, UserFacts;
    GroupMemberList = "group.member.list", Groups, GroupFacts;
    GroupMemberRemove = "group.member.remove", Groups, MemberRemoveFacts;
    GroupRoleSet = "group.role.set", Groups, RoleSetFacts;
    GroupOwnerTransfer = "group.owner.transfer", Groups, MemberFacts;
    GroupMuteSet = "group.mute.set", Groups, MuteSetFacts;
    GroupMuteClear = "group.mute.clear", Groups, MemberFacts;
    GroupMuteAll = "group.mute.all", Groups, MuteAllFacts;
    GroupInvite = "group.invite", Groups, InviteFacts;
    GroupJoinRequest = "group.join.request", Groups, GroupFacts;
    GroupJoinList = "group.join.list", Groups, GroupFacts;
    GroupJoinApprove = "group.join.approve", Groups, GroupRequestFacts;
    GroupJoinReject = "group.join.reject", Groups, GroupRequestFacts;
    GroupJoinCancel = "group.join.cancel", Groups, GroupRequestFacts;
    GroupSettingsGet = "group.settings.get", Groups, GroupFacts;
    GroupSettingsSet = "group.settings.set", Groups, SettingsSetFacts;
    GroupAnnouncementList = "group.announcement.list", Groups, GroupFacts;
    GroupAnnouncementCreate = "group.announcement.create", Groups, DraftFacts;
    GroupAnnouncementUpdate = "group.announcement.update", Groups, DraftEditFacts;
    GroupAnnouncementRead = "group.announcement.read", Groups, AnnouncementFacts;
    GroupAnnouncementDelete = "group.announcement.delete", Groups, AnnouncementFacts;
    GroupProfileUpdate = "group.profile.update", Groups, ProfileFacts;
    NotificationList = "notification.list", Notifications, NoFacts;
    NotificationRead = "notification.read", Notifications, NoFacts;
    NotificationReadAll = "notification.read_all", Notifications, NoFacts;
    NotificationUnread = "notification.unread", Notifications, NoFacts;
    ReportCreate = "report.create", Reports, NoFacts;
}

impl CommandName {
    /// The command of this name, if it is in the table.
    pub fn parse(name: &str) -> Option<CommandName> {
        CommandName::ALL.iter().copied().find(|c| c.name() == name)
    }
}

impl fmt::Display for CommandName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Facts that do not fit their command's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsError {
    pub command: CommandName,
    pub why: String,
}

impl fmt::Display for FactsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "facts of {}: {}", self.command, self.why)
    }
}

impl std::error::Error for FactsError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_unique_and_parse_back() {
        for (i, a) in CommandName::ALL.iter().enumerate() {
            assert_eq!(CommandName::parse(a.name()), Some(*a));
            let prefix = a.name().split('.').next().unwrap();
            let family = match prefix {
                "friend" | "block" => Family::Friends,
                "group" => Family::Groups,
                "notification" => Family::Notifications,
                "report" => Family::Reports,
                other => panic!("no family for {other}"),
            };
            assert_eq!(a.family(), family, "{a}");
            for b in &CommandName::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
        assert_eq!(CommandName::parse("friend.nope"), None);
    }

    #[test]
    fn a_missing_or_renamed_fact_is_an_error() {
        let full = json!({ "friends": true });
        let f = Facts::parse(CommandName::FriendP2pSend, &full).unwrap();
        assert_eq!(f, Facts::FriendP2pSend(P2pSendFacts { friends: true }));
        assert_eq!(f.to_value(), full);
        let input: Value = serde_json::from_str(&f.rule_input(&json!({ "to": "usrB" }))).unwrap();
        assert_eq!(input, json!({ "args": { "to": "usrB" }, "facts": full }));
        assert!(Facts::parse(CommandName::FriendP2pSend, &json!({})).is_err(), "missing");
        assert!(Facts::parse(CommandName::FriendP2pSend, &json!({ "friend": true })).is_err(), "renamed");
        assert!(Facts::parse(CommandName::FriendP2pSend, &json!({ "friends": "yes" })).is_err(), "mistyped");
        assert!(Facts::parse(CommandName::FriendList, &json!({})).is_ok());
        assert!(Facts::parse(CommandName::FriendList, &json!({ "x": 1 })).is_err());
    }

    #[test]
    fn a_family_reads_only_its_own_commands() {
        let ok = Facts::parse_in(Family::Friends, CommandName::FriendP2pSend, &json!({ "friends": false }));
        assert_eq!(ok, Ok(Facts::FriendP2pSend(P2pSendFacts { friends: false })));
        let other = Facts::parse_in(Family::Friends, CommandName::GroupMemberList, &json!({}));
        assert!(other.unwrap_err().why.contains("not a command of Friends"));
        assert!(Facts::parse_in(Family::Friends, CommandName::FriendP2pSend, &json!({})).is_err(), "missing");
    }
}
