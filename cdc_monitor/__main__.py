from cdc_monitor.cli.main import main

main()
