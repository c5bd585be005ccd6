#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| taopipe_fuzz_targets::netspec(data));
