from tirc.driver import main

main()
