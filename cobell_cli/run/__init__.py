"""Running the user's job: scale-out injection, the child process and its signals, the
submit sequence around it, and the local Spark standalone cluster."""
