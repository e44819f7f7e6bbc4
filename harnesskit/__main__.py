from harnesskit.cli import main

main()
