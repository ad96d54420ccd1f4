//! The Lua scripts that keep Redis copies coherent with the inner store: hot message copies and the cached
//! topic and subscription records they affect. Each runs atomically, so a reader never sees half an update.
//!
//! Shapes the scripts rely on:
//! - a hot copy is `{P|H|R}|{sender}|{json}` or the tombstone `~` (hard-deleted);
//! - the cached topic is a hash with `json` plus `seq`, `touched` and `del_id` fields that only rise, so an
//!   append can patch them without reading the topic and a fill from an older read cannot lower them; an `inv`
//!   field marks an invalidation in progress;
//! - the cached subscriptions of a topic are a hash of `{uid}` → json, where `!{until_ms}` is a tombstone;
//! - `hot_msg_dels` holds, per soft-deleting user, the highest `hi` of their deletions (a read by them that
//!   may reach it goes to the store), and under `all` the hard-deleted ranges beyond `last_seq` when they
//!   were deleted, as `low-hi,` items, so that messages stored into them later are copied as tombstones.
//!
//! Tombstones exist because of the cache-aside race: a reader that loaded the old record before a write and
//! fills after the write's invalidation would otherwise put the old record back for a whole TTL. A fill is
//! refused while a tombstone younger than the grace period stands.

use redis::Script;

/// The Redis clock in milliseconds.
const CLOCK: &str =
    "local t = redis.call('TIME') local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n";

/// KEYS: topic cache, last_seq, hot seqs, hot copy, deletions, tenant index.
/// ARGV: seq, created, cache ttl, hot?, copy, hot ttl, tenant cap, index member, topic head.
const APPEND: &str = r"
local seq = tonumber(ARGV[1])
if seq > tonumber(redis.call('HGET', KEYS[1], 'seq') or '0') then redis.call('HSET', KEYS[1], 'seq', seq) end
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', KEYS[1], 'touched') or '0') then
  redis.call('HSET', KEYS[1], 'touched', ARGV[2])
end
redis.call('EXPIRE', KEYS[1], ARGV[3], 'NX')
if ARGV[4] ~= '1' then return 0 end
if seq > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], seq) end
local copy = ARGV[5]
for low, hi in string.gmatch(redis.call('HGET', KEYS[5], 'all') or '', '(%d+)-(%d+)') do
  if seq >= tonumber(low) and seq < tonumber(hi) then copy = '~' end
end
local ttl = tonumber(ARGV[6])
redis.call('SET', KEYS[4], copy, 'EX', ttl)
redis.call('ZADD', KEYS[3], seq, seq)
redis.call('EXPIRE', KEYS[3], ttl)
if redis.call('TTL', KEYS[5]) > 0 then redis.call('EXPIRE', KEYS[5], ttl) end
redis.call('ZADD', KEYS[6], clock, ARGV[8])
redis.call('EXPIRE', KEYS[6], ttl)
local function evict(member)
  local bar = string.find(member, '|', 1, true)
  if not bar then return end
  local s, topic = string.sub(member, 1, bar - 1), string.sub(member, bar + 1)
  redis.call('ZREM', ARGV[9] .. topic .. ':hot_msg_seqs', s)
  redis.call('DEL', ARGV[9] .. topic .. ':hot_msg:' .. s)
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', clock - ttl * 1000, 'LIMIT', 0, 100)) do
  evict(m)
  redis.call('ZREM', KEYS[6], m)
end
local over = redis.call('ZCARD', KEYS[6]) - tonumber(ARGV[7])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[6], math.min(over, 100))
  for i = 1, #popped, 2 do evict(popped[i]) end
end
return 1
";

/// KEYS: last_seq, deletions. ARGV: copy head, low, before (0: none), limit, reader, max steps.
/// Answers `{'1', json…}` newest first, or `{'0'}` when the copies cannot answer the window whole.
const READ: &str = r"
local last = redis.call('GET', KEYS[1])
if not last then return {'0'} end
local hi = tonumber(last)
local before = tonumber(ARGV[3])
if before > 0 and before - 1 < hi then hi = before - 1 end
local lo = tonumber(ARGV[2])
if tonumber(redis.call('HGET', KEYS[2], ARGV[5]) or '0') > lo then return {'0'} end
local out = {'1'}
local limit, steps = tonumber(ARGV[4]), 0
local s = hi
while s >= lo and #out - 1 < limit do
  steps = steps + 1
  if steps > tonumber(ARGV[6]) then return {'0'} end
  local copy = redis.call('GET', ARGV[1] .. s)
  if not copy then return {'0'} end
  if copy ~= '~' then
    local bar = string.find(copy, '|', 3, true)
    if not bar then return {'0'} end
    if string.sub(copy, 1, 1) ~= 'P' and string.sub(copy, 3, bar - 1) ~= ARGV[5] then return {'0'} end
    table.insert(out, string.sub(copy, bar + 1))
  end
  s = s - 1
end
return out
";

/// KEYS: topic cache, subscription cache, hot seqs, deletions, last_seq.
/// ARGV: hard?, uid, del_id, cache ttl, hot ttl, copy head, hot?, grace ms, then low/hi pairs.
const DELETE: &str = r"
if tonumber(ARGV[3]) > tonumber(redis.call('HGET', KEYS[1], 'del_id') or '0') then
  redis.call('HSET', KEYS[1], 'del_id', ARGV[3])
end
redis.call('EXPIRE', KEYS[1], ARGV[4], 'NX')
local hard = ARGV[1] == '1'
if not hard then
  redis.call('HSET', KEYS[2], ARGV[2], '!' .. (clock + tonumber(ARGV[8])))
  redis.call('EXPIRE', KEYS[2], ARGV[4], 'NX')
end
local had_ttl = redis.call('TTL', KEYS[4])
local last = tonumber(redis.call('GET', KEYS[5]) or '0')
local top = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
local ahead = redis.call('HGET', KEYS[4], 'all') or ''
local future = false
for i = 9, #ARGV, 2 do
  local low, hi = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  if hi - 1 > last then future = true end
  if hard then
    for _, s in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], low, hi - 1)) do
      redis.call('SET', ARGV[6] .. s, '~', 'XX', 'KEEPTTL')
    end
    if hi - 1 > last then ahead = ahead .. math.max(low, last + 1) .. '-' .. hi .. ',' end
  elseif hi > top then
    top = hi
  end
end
if hard then
  if ahead ~= '' then redis.call('HSET', KEYS[4], 'all', ahead) end
else
  redis.call('HSET', KEYS[4], ARGV[2], top)
end
if future and ARGV[7] == '1' then
  redis.call('PERSIST', KEYS[4])
elseif had_ttl ~= -1 then
  redis.call('EXPIRE', KEYS[4], ARGV[5])
end
return 1
";

/// KEYS: hot copy. ARGV: new copy. Leaves tombstones and missing copies alone.
const SET_AUDIT: &str = r"
local current = redis.call('GET', KEYS[1])
if not current or current == '~' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'XX', 'KEEPTTL')
return 1
";

/// KEYS: topic cache, subscription cache, hot seqs, deletions. ARGV: copy head, grace ms.
const DROP_TOPIC: &str = r"
for _, s in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do redis.call('DEL', ARGV[1] .. s) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local grace = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'inv', clock + grace)
redis.call('PEXPIRE', KEYS[1], grace)
redis.call('HSET', KEYS[2], '*', '!' .. (clock + grace))
redis.call('PEXPIRE', KEYS[2], grace)
return 1
";

/// KEYS: topic cache. ARGV: json, seq, touched, del_id, cache ttl.
const FILL_TOPIC: &str = r"
if tonumber(redis.call('HGET', KEYS[1], 'inv') or '0') > clock then return 0 end
redis.call('HDEL', KEYS[1], 'inv')
redis.call('HSET', KEYS[1], 'json', ARGV[1])
local fields = {'seq', 'touched', 'del_id'}
for i, f in ipairs(fields) do
  if tonumber(ARGV[i + 1]) > tonumber(redis.call('HGET', KEYS[1], f) or '0') then
    redis.call('HSET', KEYS[1], f, ARGV[i + 1])
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[5], 'NX')
return 1
";

/// KEYS: topic cache. ARGV: grace ms.
const INVALIDATE_TOPIC: &str = r"
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'inv', clock + tonumber(ARGV[1]))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
";

/// KEYS: subscription cache. ARGV: uid, json, cache ttl.
const FILL_SUB: &str = r"
for _, f in ipairs({'*', ARGV[1]}) do
  local v = redis.call('HGET', KEYS[1], f)
  if v and string.sub(v, 1, 1) == '!' and tonumber(string.sub(v, 2)) > clock then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3], 'NX')
return 1
";

/// KEYS: subscription cache. ARGV: uid, grace ms, cache ttl.
const INVALIDATE_SUB: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], '!' .. (clock + tonumber(ARGV[2])))
redis.call('EXPIRE', KEYS[1], ARGV[3], 'NX')
return 1
";

/// Every coherence script, compiled once per decorator stack.
pub(crate) struct Scripts {
    pub(crate) append: Script,
    pub(crate) read: Script,
    pub(crate) delete: Script,
    pub(crate) set_audit: Script,
    pub(crate) drop_topic: Script,
    pub(crate) fill_topic: Script,
    pub(crate) invalidate_topic: Script,
    pub(crate) fill_sub: Script,
    pub(crate) invalidate_sub: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let clocked = |body: &str| Script::new(&format!("{CLOCK}{body}"));
        Self {
            append: clocked(APPEND),
            read: Script::new(READ),
            delete: clocked(DELETE),
            set_audit: Script::new(SET_AUDIT),
            drop_topic: clocked(DROP_TOPIC),
            fill_topic: clocked(FILL_TOPIC),
            invalidate_topic: clocked(INVALIDATE_TOPIC),
            fill_sub: clocked(FILL_SUB),
            invalidate_sub: clocked(INVALIDATE_SUB),
        }
    }
}
