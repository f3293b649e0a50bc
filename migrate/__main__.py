from ts2export.cli import main

main()
