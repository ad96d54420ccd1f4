//! The storage contract suite that every storage adapter must pass.
//!
//! Each case is a public async function in [`cases`] taking a [`Fixture`]: a fresh, empty store plus the two
//! tenants the case may use. Adapters run the whole suite with [`storage_contract_tests!`], which expands to one
//! `#[tokio::test]` per case so that failures name the case:
//!
//! ```ignore
//! palaver_contract::storage_contract_tests!(async { MemoryStore::new() });
//! ```
//!
//! The expression evaluates to the store. When something (a temporary directory, a database schema) must
//! outlive the store, write `storage_contract_tests!(fixture = async { ... })` with an expression evaluating to
//! a [`Fixture`] built with [`Fixture::with_guard`]. The calling crate needs `tokio`
//! with the `macros` and `rt-multi-thread` features among its dev-dependencies.
//!
//! A relation store (friend requests, friendships, blocks) runs [`relation_contract_tests!`], which takes the
//! same two forms as [`storage_contract_tests!`] and may sit next to it in one test module, since no case names
//! are shared:
//!
//! ```ignore
//! palaver_contract::relation_contract_tests!(async { MemoryStore::new() });
//! ```
//!
//! A notification store (each user's system notifications) runs [`notification_contract_tests!`] the same way.
//! A group store (roles, mutes, settings, join requests, announcements) runs [`group_contract_tests!`] the same
//! way too.
//!
//! The admin command ledger and abuse reports run [`command_contract_tests!`] the same way.
//!
//! A tenant registry runs its own suite with [`tenant_contract_tests!`], whose expression evaluates to a fresh,
//! empty `TenantStore`:
//!
//! ```ignore
//! palaver_contract::tenant_contract_tests!(async { MemoryTenants::new() });
//! ```
//!
//! The task queue runs [`queue_contract_tests!`] (the expression evaluates to a `TaskQueue` whose topics start
//! empty), the outbox [`outbox_contract_tests!`] and the audit log [`audit_contract_tests!`], both in the two forms
//! of [`storage_contract_tests!`].
//!
//! A store that is the user and message ports and the outbox runs [`owed_contract_tests!`] too: a password
//! change, a token revocation or a moderation decision commits the records it owes in its own transaction.
//!
//! The device store (push tokens) runs [`device_contract_tests!`] in the same two forms, the call store
//! [`call_contract_tests!`], the tenant settings store [`settings_contract_tests!`] and the file record store
//! [`file_contract_tests!`] too, and the credential store (the accounts' email addresses and phone numbers)
//! [`credential_contract_tests!`]. A blob store (file bytes) runs [`blob_contract_tests!`], whose expression
//! evaluates to the store.
//!
//! The one-time code store (confirmation and reset codes) runs [`code_contract_tests!`], whose expression
//! evaluates to an `Arc<dyn CodeStore>`, the seq allocator [`seq_contract_tests!`], whose expression
//! evaluates to an `Arc<dyn SeqAllocator>`, and the idempotency keys [`idempotency_contract_tests!`], whose
//! expression evaluates to an `Arc<dyn IdempotencyStore>`.
//!
//! The plugin key-value store (the plugins' `kv` import) runs [`plugin_kv_contract_tests!`] in the two forms of
//! [`storage_contract_tests!`]: the expression evaluates to the store (any `PluginKv`, such as the in-process
//! `MemoryKv`) or, with `fixture =`, to a [`Fixture`] over it. Its TTL cases sleep on the wall clock.
//!
//! The plugin choice store (the tenants' plugin choices, versioned so that nodes catch up) runs
//! [`plugin_choice_contract_tests!`] in the same two forms. Its cases use plugin names of their own and compare
//! versions only with each other, so one store may serve them all.
//!
//! The plugin release store (uploaded releases, their rollouts versioned so that nodes catch up, and what each node
//! runs) runs [`plugin_release_contract_tests!`] in the same two forms. Its cases use plugin names unique to the
//! run and compare revisions only with each other, so one store, even one that outlives the run, may serve them all.
//!
//! The suite only uses the port traits, so it runs unchanged against any adapter.

pub mod cases;
mod data;
mod fixture;

pub use data::bare_topic;
pub use fixture::{CommandStorage, Fixture, GroupStorage, NotificationStorage, RelationStorage, Storage};

/// The shared body of the public contract macros, not to be called directly. Given `[fixture = expr]` or `[expr]`
/// and a list of case names, it expands to one `#[tokio::test]` per case, each on a fresh [`Fixture`] (the
/// plain form wraps the store it makes in [`Fixture::new`]). The `@each` form binds what the expression evaluates
/// to under the given name and type and hands it to each case; the expression is awaited in the test's own body,
/// so a `return` in it ends the test.
#[doc(hidden)]
#[macro_export]
macro_rules! __contract_suite {
    (@each $binding:ident: $ty:ty = $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let $binding: $ty = $make.await;
                $crate::cases::$case($binding).await;
            }
        )*
    };
    ([fixture = $make:expr] $($case:ident),* $(,)?) => {
        $crate::__contract_suite!(@each fixture: $crate::Fixture<_> = $make; $($case),*);
    };
    ([$make:expr] $($case:ident),* $(,)?) => {
        $crate::__contract_suite!(
            [fixture = async { $crate::Fixture::new($make.await) }] $($case),*
        );
    };
}

/// Expands to one `#[tokio::test]` per contract case, each on a fresh store made by the given async expression.
#[macro_export]
macro_rules! storage_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            user_create_get_update,
            user_duplicate_id_conflicts,
            login_taken_conflicts,
            external_identity_names_one_account,
            find_auth_ignores_case,
            find_auth_folds_look_alikes,
            set_secret_bumps_auth_version,
            user_tag_search,
            topic_create_get_conflict,
            topic_update,
            topic_delete_removes_subs_and_messages,
            topic_tag_search,
            sub_upsert_get_list,
            sub_soft_delete_and_resurrect,
            sub_removed_by_others_is_marked,
            sub_private_changes_only_an_active_subscription,
            sub_update_mode,
            sub_cursors_are_monotonic,
            append_stores_and_raises_topic_seq,
            append_duplicate_client_mid,
            append_same_seq_conflicts,
            append_to_missing_topic_is_not_found,
            group_and_p2p_histories_are_separate,
            list_messages_window,
            held_messages_are_visible_to_their_sender_only,
            hard_delete_hides_for_everyone,
            soft_delete_hides_for_reader_only,
            list_deletions_merges_ranges,
            tenants_are_isolated,
            tenant_histories_are_isolated,
            concurrent_appends_all_stored,
            queued_appends_answer_once_awaited,
        );
    };
}

/// Expands to one `#[tokio::test]` per relation case, each on a fresh store made by the given async expression
/// (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! relation_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            friend_request_create_is_idempotent,
            friend_request_concurrent_creates_store_one,
            friend_request_count_since,
            friend_accept_makes_friends_both_ways,
            friend_request_wrong_actor_refused,
            friend_request_decided_once,
            friend_concurrent_accepts_make_one_friendship,
            block_cancels_pending_and_shows_both_ways,
            friend_remark_set_and_cleared,
            friend_remove_both_ways,
            relation_lists_page_by_cursor,
            relations_tenants_are_isolated,
        );
    };
}

/// Expands to one `#[tokio::test]` per notification case, each on a fresh store made by the given async
/// expression (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! notification_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            notification_add_assigns_rising_ids,
            notification_list_pages_newest_first,
            notification_unread_only_lists_unread,
            notification_mark_read_once_keeps_first_time,
            notification_mark_read_of_others_is_not_found,
            notification_concurrent_mark_read_once,
            notification_mark_all_read_counts_unread,
            notification_expired_are_gone,
            notification_content_round_trips,
            notification_tenants_are_isolated,
        );
    };
}

/// Expands to one `#[tokio::test]` per group store case, each on a fresh store made by the given async expression
/// (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! group_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            group_ensure_owner_once,
            group_concurrent_ensure_owner_one_owner,
            group_set_role_admin_and_member,
            group_admin_limit_refused,
            group_concurrent_grants_respect_limit,
            group_owner_role_refused,
            group_transfer_owner_moves_ownership,
            group_concurrent_transfers_one_wins,
            group_mute_unmute_member_and_everyone,
            group_mute_expires,
            group_forget_member_keeps_owner,
            group_settings_default_then_stored,
            group_tenants_are_isolated,
            group_join_request_create_is_idempotent,
            group_join_concurrent_creates_store_one,
            group_join_request_decided_once,
            group_join_cancel_only_by_its_user,
            group_join_concurrent_decisions_one_wins,
            group_join_requests_list_pages,
            group_announcement_edit_and_remove,
            group_announcements_list_pinned_first,
            group_announcement_read_marks,
            group_announcement_concurrent_reads_mark_once,
            group_announcement_content_round_trips,
        );
    };
}

/// Expands to one `#[tokio::test]` per admin command and abuse report case, each on a fresh store made by the
/// given async expression (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! command_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            command_claim_runs_once_then_done,
            command_lease_and_release_hand_over,
            command_finish_without_claim_is_final,
            command_concurrent_claims_one_runs,
            command_tenants_are_isolated,
            report_add_list_count,
            report_resolved_once,
        );
    };
}

/// Expands to one `#[tokio::test]` per seq allocator case, each on a fresh allocator (an
/// `Arc<dyn SeqAllocator>`) made by the given async expression.
#[macro_export]
macro_rules! seq_contract_tests {
    ($make:expr) => {
        $crate::__contract_suite!(@each seq: _ = $make;
            seqs_rise_above_the_floor_and_rebaseline_never_lowers,
            seq_runs_are_contiguous_and_follow_single_seqs,
            seq_tenants_and_topics_count_apart,
            concurrent_seq_runs_never_overlap,
        );
    };
}

/// Expands to one `#[tokio::test]` per idempotency key case, each on a fresh store (an
/// `Arc<dyn IdempotencyStore>`) made by the given async expression.
#[macro_export]
macro_rules! idempotency_contract_tests {
    ($make:expr) => {
        $crate::__contract_suite!(@each store: _ = $make;
            idempotency_keys_go_pending_done_and_failed,
            claimed_batches_answer_as_claims_one_by_one,
        );
    };
}

/// Expands to one `#[tokio::test]` per one-time code store case, each on a fresh store (an
/// `Arc<dyn CodeStore>`) made by the given async expression.
#[macro_export]
macro_rules! code_contract_tests {
    ($make:expr) => {
        $crate::__contract_suite!(@each codes: _ = $make;
            codes_are_consumed_once,
            wrong_tries_wear_a_code_out,
            a_new_code_replaces_the_old,
            codes_expire,
            sends_are_limited_per_hour,
            one_of_two_concurrent_redeems_wins,
        );
    };
}

/// Expands to one `#[tokio::test]` per plugin key-value store case, each on a fresh store made by the given async
/// expression (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`]. The store
/// needs only to be a `PluginKv`: the concurrent case races two commits within one task.
#[macro_export]
macro_rules! plugin_kv_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            kv_set_get_delete_round_trip,
            kv_scopes_are_isolated,
            kv_values_expire_after_their_ttl,
            kv_compare_and_set_success_and_conflict,
            kv_quota_on_keys,
            kv_quota_on_bytes,
            kv_usage_is_exact,
            kv_batch_with_several_ops_on_one_key,
            kv_concurrent_commits_respect_the_quota,
            kv_values_with_arbitrary_bytes_round_trip,
            kv_largest_keys_and_values_fit,
        );
    };
}

/// Expands to one `#[tokio::test]` per plugin choice store case, each on a store made by the given async expression
/// (or, with `fixture =`, a [`Fixture`]), exactly like [`storage_contract_tests!`]. The store must be a
/// `PluginChoiceStore` that can be cloned into spawned tasks (`Clone + 'static`). The cases use plugin names of
/// their own and never assume a version's number, so the store need not be fresh.
#[macro_export]
macro_rules! plugin_choice_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            plugin_choice_puts_get_rising_versions,
            plugin_choice_since_zero_lists_current_in_order,
            plugin_choice_put_replaces_the_earlier,
            plugin_choice_since_lists_only_later,
            plugin_choice_limit_is_honoured,
            plugin_choice_tenants_and_plugins_are_separate,
            plugin_choice_json_round_trips,
            plugin_choice_concurrent_puts_in_order,
        );
    };
}

/// Expands to one `#[tokio::test]` per plugin release store case, each on a store made by the given async
/// expression (or, with `fixture =`, a [`Fixture`]), exactly like [`storage_contract_tests!`]. The store must be a
/// `PluginReleaseStore` that can be cloned into spawned tasks (`Clone + 'static`). The cases use plugin names unique
/// to the run and never assume a revision's number, so the store need not be fresh.
#[macro_export]
macro_rules! plugin_release_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            plugin_release_put_once,
            plugin_release_other_digest_conflicts,
            plugin_release_bytes_round_trip,
            plugin_release_listing_newest_first,
            plugin_release_rollout_puts_get_rising_revisions,
            plugin_release_rollout_since_zero_lists_current_in_order,
            plugin_release_rollout_put_replaces_the_earlier,
            plugin_release_rollout_since_lists_only_later,
            plugin_release_rollout_limit_is_honoured,
            plugin_release_rollout_canary_and_live_round_trip,
            plugin_release_rollout_concurrent_puts_in_order,
            plugin_release_node_report_replaces_per_node_and_plugin,
            plugin_release_node_reports_by_plugin_then_node,
        );
    };
}

/// Expands to one `#[tokio::test]` per tenant registry case, each on a fresh, empty registry made by the given
/// async expression.
#[macro_export]
macro_rules! tenant_contract_tests {
    ($make:expr) => {
        $crate::__contract_suite!(@each registry: _ = $make;
            registry_create_get_find_by_code,
            registry_taken_code_conflicts,
            registry_api_key_finds_tenant,
            registry_api_key_on_two_tenants_conflicts,
            registry_tenant_state_round_trips,
            registry_list_tenants_by_id,
            registry_missing_tenant,
            registry_api_key_removal,
        );
    };
}

/// Expands to one `#[tokio::test]` per task queue case, each on a fresh queue made by the given async expression.
/// The queue may be shared by cases (they use groups of their own) but each case's topics must start empty.
#[macro_export]
macro_rules! queue_contract_tests {
    ($make:expr) => {
        $crate::__contract_suite!(@each queue: _ = $make;
            queue_order_per_key,
            queue_buffered_records_come_at_once,
            queue_group_resumes_after_commit,
            queue_uncommitted_is_redelivered,
            queue_groups_are_independent,
            queue_headers_round_trip,
            queue_batch_keeps_order,
        );
    };
}

/// Expands to one `#[tokio::test]` per outbox case, each on a fresh store made by the given async expression (or,
/// with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! outbox_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            outbox_pending_in_write_order,
            outbox_tenants_are_isolated,
            outbox_remove_and_depth,
            outbox_lease_one_owner,
        );
    };
}

/// Expands to one `#[tokio::test]` per case of the records a user change owes the queue (they commit with it),
/// each on a fresh store that is a `UserStore`, a `MessageStore` and an `OutboxStore`, made like [`storage_contract_tests!`]'s.
#[macro_export]
macro_rules! owed_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            set_secret_commits_owed_records,
            revoke_tokens_commits_owed_records,
            set_audit_commits_owed_records,
        );
    };
}

/// Expands to one `#[tokio::test]` per audit log case, each on a fresh store made by the given async expression
/// (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! audit_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            audit_round_trips,
            audit_event_id_stored_once,
            audit_tenants_are_isolated,
        );
    };
}

/// Expands to one `#[tokio::test]` per device store case, each on a fresh store made by the given async expression
/// (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! device_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            device_upsert_round_trips,
            device_moves_to_its_newest_user,
            device_delete_reports_and_removes,
            device_tenants_are_isolated,
            device_delayed_pushes_are_claimed_once_when_due,
        );
    };
}

/// Expands to one `#[tokio::test]` per tenant settings case, each on a fresh store made by the given async
/// expression (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! settings_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            settings_round_trip_and_replace,
            settings_tenants_and_names_are_isolated,
        );
    };
}

/// Expands to one `#[tokio::test]` per file record store case, each on a fresh store made by the given async
/// expression (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! file_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            file_record_round_trips,
            pending_files_settle_once,
            file_references_link_and_list,
            file_unreferenced_are_listed_oldest_first,
            file_uploads_counted_and_tenants_isolated,
        );
    };
}

/// Expands to one `#[tokio::test]` per credential store case, each on a fresh store made by the given async
/// expression (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! credential_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            credential_add_known_and_listed,
            credential_limit_counts_all,
            credential_confirmed_by_another_conflicts,
            credential_confirm_not_found_conflict_idempotent,
            credential_unconfirmed_claims_are_shared_until_confirmed,
            credential_delete_and_forget,
            credential_find_ignores_unconfirmed,
            credential_tenants_are_isolated,
            credential_concurrent_adds_respect_limit,
            credential_concurrent_confirms_one_wins,
        );
    };
}

/// Expands to one `#[tokio::test]` per blob store case, each on the `BlobStore` the given async expression
/// evaluates to; a block evaluating to that future may `return` first to skip the case, as when its server is not
/// configured. The cases use keys of their
/// own, so one store may serve them all.
#[macro_export]
macro_rules! blob_contract_tests {
    ($make:expr) => {
        $crate::__contract_suite!(@each store: _ = $make;
            blob_round_trip_and_ranges,
            blob_failed_upload_leaves_nothing,
            blob_large_object_spans_parts,
        );
    };
}

/// Expands to one `#[tokio::test]` per call store case, each on a fresh store made by the given async expression
/// (or, with `fixture =`, a fresh [`Fixture`]), exactly like [`storage_contract_tests!`].
#[macro_export]
macro_rules! call_contract_tests {
    ($($input:tt)+) => {
        $crate::__contract_suite!([$($input)+]
            call_create_round_trips,
            call_accept_only_from_started,
            call_missed_only_unanswered,
            call_declined_never_overwrites_accepted,
            call_finished_only_ends_an_accepted_call,
            call_disconnected_ends_live_calls_only,
            call_accept_racing_missed_one_wins,
            call_live_call_of_a_party,
            call_create_is_busy_when_a_party_is_live,
            call_starts_racing_for_one_callee_ring_once,
            call_live_calls_list_the_oldest_live_rows,
            call_tenants_are_isolated,
        );
    };
}
