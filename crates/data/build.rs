// The suite is embedded into the binary (`suite::embedded`): rebuild when any of its files change.
fn main() {
    for dir in ["scenarios", "safety", "personas", "templates", "sap", "simulator", "judge", "rules", "annotation", "memory"] {
        println!("cargo:rerun-if-changed=../../suites/{dir}");
    }
    println!("cargo:rerun-if-changed=../../suites/FORMAT.md");
    println!("cargo:rerun-if-changed=../../suites/suite.json");
}
