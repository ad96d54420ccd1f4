//! A test gate driven by its input. `on-login`, by the user agent: `boom` traps, `spin` never returns, `reject`
//! refuses with 403, `bad-code` refuses with code 200 (a malformed answer); anything else allows. `before-subscribe`,
//! by the wanted mode: `boom` traps, `reject` refuses with 409, `drop-s` restricts to `given` without `S`, `grant-d`
//! restricts to `given` plus `D` (more than given: the host must refuse it), `delta` restricts to `-W` (a change,
//! not a mode), `no-join` restricts to `given` without `J` (a member that could never attach: refused too), `echo`
//! refuses with 418 and `given` as the reason (what the gates before it left); anything else allows.

use palaver_plugin_sdk::{Context, Gate, Host, Join, JoinVerdict, Login, Rejection};

/// Does what it is told.
#[derive(Default)]
pub struct GateFault;

impl Gate for GateFault {
    fn on_login<H: Host>(&mut self, _cx: &mut Context<'_, H>, login: &Login) -> Result<(), Rejection> {
        match login.user_agent.as_str() {
            "boom" => panic!("boom requested"),
            "spin" => {
                let mut n = login.user.len() as u64;
                loop {
                    n = std::hint::black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                }
            }
            "reject" => Err(Rejection::forbidden(format!("{} may not log in from {}", login.user, login.remote_addr))),
            "bad-code" => Err(Rejection::new(200, "not a refusal code")),
            _ => Ok(()),
        }
    }

    fn before_subscribe<H: Host>(&mut self, _cx: &mut Context<'_, H>, join: &Join) -> JoinVerdict {
        match join.want.as_str() {
            "boom" => panic!("boom requested"),
            "reject" => JoinVerdict::reject(409, format!("{} may not join {}", join.user, join.topic)),
            "drop-s" => JoinVerdict::restrict(join.given_without("S")),
            "grant-d" => JoinVerdict::restrict(format!("{}D", join.given)),
            "delta" => JoinVerdict::restrict("-W"),
            "no-join" => JoinVerdict::restrict(join.given_without("J")),
            "echo" => JoinVerdict::reject(418, join.given.clone()),
            _ => JoinVerdict::Allow,
        }
    }
}

palaver_plugin_sdk::gate!(GateFault);

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_plugin_sdk::testing::run_gate_fixtures;

    #[test]
    fn the_manifest_fixtures_pass() {
        assert_eq!(run_gate_fixtures::<GateFault>(include_str!("../plugin.toml")), Ok(2));
    }
}
