"""ProgAgent inside the RL frameworks users already train with: verl (integrations/verl/) and
verifiers / prime-rl (integrations/verifiers/). What they share: the numeric report of one episode
(episode_info.py)."""
