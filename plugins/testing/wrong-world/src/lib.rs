//! A test component built against another package's world (`acme:filter`): its manifest claims the
//! `publish-filter` world, and the load gate must refuse it for not exporting `palaver:plugin/before-publish`.

// Raw wit-bindgen output declares exports with `unsafe`; plugins written with the SDK never need to.
#![allow(unsafe_code)]

wit_bindgen::generate!({ path: "wit", world: "acme:filter/filter" });

struct Filter;

impl exports::acme::filter::check::Guest for Filter {
    fn check(text: String) -> bool {
        !text.is_empty()
    }
}

export!(Filter);
